"""What a RayCluster spec change does when zero-downtime upgrades are off (`upgradeStrategy.type: None`, or
ENABLE_ZERO_DOWNTIME=false with no type), and how raypilot says so.

KubeRay (reference 2.2, "None"): the change is ignored. The active RayCluster keeps its old spec, and even if
its template were rewritten, KubeRay's RayCluster controller does not replace running Pods on a template
change. KubeRay records nothing, so the user believes the change is live.

raypilot keeps that behaviour (the RayCluster is left alone) and tells the truth about it: while the goal
differs from the active cluster's spec, the raypilot condition `ClusterSpecNotApplied` is True with a
message that names the cluster, and one Warning Event `RayClusterSpecChangeNotApplied` is recorded per goal.
The condition goes as soon as the goal matches the cluster again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from models.hashing import is_cluster_spec_hash_equal
from models.meta import ConditionStatus, find_condition, is_condition_true
from models.operator import OperatorConfig
from models.raycluster import RayCluster
from models.rayservice import RayService, RayServiceConditionType, RayServiceStatuses
from workflows.decisions.rayservice.cluster import (
    goal_cluster_hash,
    is_zero_downtime_upgrade_enabled,
    should_update_cluster,
)
from workflows.decisions.rayservice.conditions import RayServiceEvent, with_condition, without_condition

__all__ = [
    "CLUSTER_SPEC_NOT_APPLIED_CONDITION",
    "EVENT_REASON_SPEC_NOT_APPLIED",
    "REASON_ZERO_DOWNTIME_DISABLED",
    "UnappliedSpec",
    "unapplied_cluster_spec",
    "with_unapplied_spec_condition",
]

CLUSTER_SPEC_NOT_APPLIED_CONDITION: Final = "ClusterSpecNotApplied"
REASON_ZERO_DOWNTIME_DISABLED: Final = "ZeroDowntimeUpgradeDisabled"
EVENT_REASON_SPEC_NOT_APPLIED: Final = "RayClusterSpecChangeNotApplied"


@dataclass(frozen=True)
class UnappliedSpec:
    """A goal spec that the active cluster does not run, and why."""

    cluster: str
    message: str


def unapplied_cluster_spec(
    rayservice: RayService, active: RayCluster | None, pending: RayCluster | None, config: OperatorConfig
) -> UnappliedSpec | None:
    """The spec change KubeRay ignores: zero-downtime upgrades off, an active cluster and no pending one, no
    upgrade in progress, a goal that is neither the active cluster's spec nor an in-place change KubeRay
    makes itself (appended worker groups, another KubeRay version). None when the active cluster runs the
    goal."""
    if active is None or pending is not None:
        return None
    if is_zero_downtime_upgrade_enabled(rayservice.spec.upgrade_strategy, config):
        return None
    if is_condition_true(rayservice.status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS):
        return None
    if should_update_cluster(rayservice, active, is_active=True):
        return None
    if is_cluster_spec_hash_equal(
        rayservice.spec.ray_cluster_config, active.metadata.annotations, partial=False
    ):
        return None
    name = f"{rayservice.metadata.namespace}/{active.metadata.name}"
    return UnappliedSpec(
        cluster=active.metadata.name,
        message=(
            "Zero-downtime upgrade is disabled (upgradeStrategy.type None or ENABLE_ZERO_DOWNTIME=false): "
            f"the rayClusterConfig change (spec hash {goal_cluster_hash(rayservice.spec)}) was NOT applied; "
            f"RayCluster {name} and its running Pods keep the "
            "previous spec (as in KubeRay). Serve config changes are still applied. Use upgradeStrategy "
            "NewCluster for a zero-downtime upgrade."
        ),
    )


def with_unapplied_spec_condition(
    status: RayServiceStatuses, unapplied: UnappliedSpec | None, now: datetime
) -> tuple[RayServiceStatuses, list[RayServiceEvent]]:
    """The status with `ClusterSpecNotApplied` set (True, with the message) or removed; a Warning Event
    when the condition appears or its message changes (a new goal), never on every pass."""
    current = find_condition(status.conditions, CLUSTER_SPEC_NOT_APPLIED_CONDITION)
    if unapplied is None:
        if current is None:
            return status, []
        return without_condition(status, CLUSTER_SPEC_NOT_APPLIED_CONDITION), []
    if current is not None and current.message == unapplied.message:
        return status, []
    result = with_condition(
        status,
        CLUSTER_SPEC_NOT_APPLIED_CONDITION,
        ConditionStatus.TRUE,
        REASON_ZERO_DOWNTIME_DISABLED,
        unapplied.message,
        now,
    )
    return result, [RayServiceEvent("Warning", EVENT_REASON_SPEC_NOT_APPLIED, unapplied.message)]
