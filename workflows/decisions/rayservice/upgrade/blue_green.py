"""The gates of a NewCluster (blue-green) upgrade in `raypilot.io/rollout` (issue #18): before the Service
switch (`prePromotionAnalysis`, and `autoPromotionEnabled: false` for a manual `promote`) and after it
(`postPromotionAnalysis`, before the old cluster is deleted). raypilot's own, after Argo Rollouts'
blue-green strategy; KubeRay switches as soon as the new cluster is ready and deletes the old one after
rayClusterDeletionDelaySeconds.

Before the switch, with the new cluster ready: the analysis must pass first (pending holds the switch, a
failure rolls back as `abort` does), then a manual promotion pauses the upgrade once (the UpgradeControl
condition, reason AwaitingPromotion) until `promote`. After the switch the old cluster is kept, past its
deletion delay, until the post-promotion analysis of the new one passes; a failure switches the Services
back to the old cluster, which becomes the active one again, and the new one is deleted after its delay.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from models.meta import ConditionStatus
from models.rayservice import RayServiceConditionType, RayServiceStatuses
from workflows.decisions.rayservice.conditions import RayServiceEvent, set_condition, with_condition
from workflows.decisions.rayservice.upgrade.analysis import REASON_ANALYSIS_FAILED, AnalysisResult
from workflows.decisions.rayservice.upgrade.controls import UPGRADE_CONTROL_CONDITION, UpgradeControls

__all__ = [
    "REASON_AWAITING_PROMOTION",
    "PostPromotion",
    "awaiting_promotion",
    "post_promotion_step",
    "pre_promotion_step",
    "switched_back",
]

REASON_AWAITING_PROMOTION: Final = "AwaitingPromotion"
REASON_SWITCHED_BACK: Final = "PostPromotionAnalysisFailed"

PrePromotionStep = Literal["switch", "hold", "fail", "await_promote"]
PostPromotionStep = Literal["none", "hold", "release", "switch_back"]


@dataclass(frozen=True)
class PostPromotion:
    """A blue-green promotion whose post-promotion analysis is not settled yet (workflow state)."""

    new_cluster: str
    old_cluster: str


def pre_promotion_step(
    pending: str,
    analysis: AnalysisResult | None,
    manual: bool,
    awaited_cluster: str,
    promote_requested: bool,
) -> PrePromotionStep:
    """What a ready pending cluster of a blue-green upgrade does this pass. `analysis`: the pre-promotion
    gate's result (None without one); `awaited_cluster`: the cluster a manual promotion paused for already."""
    if analysis is not None and analysis.verdict == "fail":
        return "fail"
    if analysis is not None and analysis.verdict == "pending":
        return "hold"
    if manual and not promote_requested:
        return "hold" if awaited_cluster == pending else "await_promote"
    return "switch"


def post_promotion_step(
    post: PostPromotion | None, active: str, analysis: AnalysisResult | None
) -> PostPromotionStep:
    """After a blue-green switch: keep the old cluster while the new one's gate is pending, let it go once
    the gate passed, switch back when it failed. `none` when there is nothing to judge (no promotion kept,
    or the active cluster is no longer the promoted one)."""
    if post is None or analysis is None or post.new_cluster != active:
        return "none"
    if analysis.verdict == "fail":
        return "switch_back"
    if analysis.verdict == "pending":
        return "hold"
    return "release"


def awaiting_promotion(
    controls: UpgradeControls, status: RayServiceStatuses, cluster: str, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    """autoPromotionEnabled false: the upgrade pauses before the switch until `promote`."""
    message = (
        f"RayCluster {cluster} is ready; the Service switch waits for promote (raypilot.io/rollout "
        "autoPromotionEnabled: false)."
    )
    result = with_condition(
        status, UPGRADE_CONTROL_CONDITION, ConditionStatus.TRUE, REASON_AWAITING_PROMOTION, message, now
    )
    paused = dataclasses.replace(controls, paused=True)
    return paused, result, RayServiceEvent("Normal", REASON_AWAITING_PROMOTION, message)


def switched_back(
    status: RayServiceStatuses, post: PostPromotion, result: AnalysisResult, goal_hash: str, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    """A failed post-promotion analysis: the old cluster is the active one again (the Services follow it
    this pass), the new one is left dangling (deleted after the deletion delay), and the spec is not tried
    again until a different one is applied."""
    message = (
        f"Analysis {result.name} failed on RayCluster {post.new_cluster} after the switch ({result.values}); "
        f"switching back to RayCluster {post.old_cluster}."
    )
    switched = status.model_copy(deep=True)
    switched.active_service_status = switched.active_service_status.model_copy(
        update={"ray_cluster_name": post.old_cluster}
    )
    switched.conditions = set_condition(
        switched.conditions,
        RayServiceConditionType.UPGRADE_IN_PROGRESS,
        ConditionStatus.FALSE,
        REASON_SWITCHED_BACK,
        message,
        switched.observed_generation,
        now,
    )
    event = RayServiceEvent("Warning", REASON_ANALYSIS_FAILED, message)
    return UpgradeControls(aborted_goal_hash=goal_hash), switched, event
