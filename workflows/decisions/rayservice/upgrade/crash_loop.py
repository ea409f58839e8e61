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

from models.rayservice import RayServiceStatuses
from models.rollout import OnUnhealthy
from workflows.decisions.rayservice.conditions import RayServiceEvent
from workflows.decisions.rayservice.upgrade.automatic_rollback import rollback_or_keep_waiting
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls

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
    """The controls, status and Warning Event for a crash-looping head Pod (`seen` shows it): a rollback
    (Abort) or only the condition (Wait)."""
    cluster = status.pending_service_status.ray_cluster_name
    crash_loop = f"The head Pod of RayCluster {cluster} is crash-looping ({seen})"
    return rollback_or_keep_waiting(
        status, controls, on_unhealthy, REASON_HEAD_POD_CRASH_LOOP, crash_loop, goal_hash, now
    )
