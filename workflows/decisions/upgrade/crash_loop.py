"""A crash-looping head Pod of the pending cluster (`raypilot.io/rollout` onUnhealthy, issue #18): treated
like an unhealthy Serve application. raypilot's own (KubeRay waits for a new cluster whose head never stays
up).

The head Pod as the Serve wait last saw it: any container waiting in CrashLoopBackOff, or restarted
`HEAD_RESTART_LIMIT` times or more, is a crash loop. `Abort` rolls back as `abort` does (RollbackInProgress,
reason HeadPodCrashLoop), `Wait` only says so; both record a Warning Event and the condition
RolloutProgressing (False, HeadPodCrashLoop). Once per pending cluster (shared with the Serve check).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from models.meta import ConditionStatus
from models.rayservice import RayServiceConditionType, RayServiceStatuses
from models.rollout import OnUnhealthy
from workflows.decisions.rayservice.conditions import RayServiceEvent, set_condition
from workflows.decisions.upgrade.controls import UpgradeControls
from workflows.decisions.upgrade.progress_deadline import (
    ROLLOUT_PROGRESSING_CONDITION,
    automatic_rollback_controls,
)

__all__ = ["HEAD_RESTART_LIMIT", "REASON_HEAD_POD_CRASH_LOOP", "head_crash_loop", "head_crash_loop_upgrade"]

HEAD_RESTART_LIMIT: Final = 3
REASON_HEAD_POD_CRASH_LOOP: Final = "HeadPodCrashLoop"
CRASH_LOOP_BACK_OFF: Final = "CrashLoopBackOff"


def head_crash_loop(head_pod: Mapping[str, Any] | None) -> str:
    """What shows the head Pod crash-looping ("" when it does not), e.g. "ray-head: CrashLoopBackOff, 4
    restarts"."""
    if head_pod is None:
        return ""
    found = []
    for container in (head_pod.get("status") or {}).get("containerStatuses") or []:
        restarts = int(container.get("restartCount") or 0)
        waiting = ((container.get("state") or {}).get("waiting") or {}).get("reason")
        if waiting == CRASH_LOOP_BACK_OFF or restarts >= HEAD_RESTART_LIMIT:
            shown = f"{waiting}, " if waiting else ""
            found.append(f"{container.get('name')}: {shown}{restarts} restarts")
    return "; ".join(found)


def head_crash_loop_upgrade(
    status: RayServiceStatuses,
    controls: UpgradeControls,
    on_unhealthy: OnUnhealthy,
    seen: str,
    goal_hash: str,
    now: datetime,
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    cluster = status.pending_service_status.ray_cluster_name
    wait = on_unhealthy == OnUnhealthy.WAIT
    message = f"The head Pod of RayCluster {cluster} is crash-looping ({seen})" + (
        "; the upgrade keeps waiting (onUnhealthy: Wait)."
        if wait
        else "; rolling back to the active cluster (onUnhealthy: Abort)."
    )
    result = status.model_copy(deep=True)
    generation = result.observed_generation
    result.conditions = set_condition(
        result.conditions,
        ROLLOUT_PROGRESSING_CONDITION,
        ConditionStatus.FALSE,
        REASON_HEAD_POD_CRASH_LOOP,
        message,
        generation,
        now,
    )
    event = RayServiceEvent("Warning", REASON_HEAD_POD_CRASH_LOOP, message)
    if wait:
        return controls, result, event
    result.conditions = set_condition(
        result.conditions,
        RayServiceConditionType.ROLLBACK_IN_PROGRESS,
        ConditionStatus.TRUE,
        REASON_HEAD_POD_CRASH_LOOP,
        message,
        generation,
        now,
    )
    return automatic_rollback_controls(goal_hash), result, event
