"""Which `raypilot.io/notify` notifications a RayService's committed change is (issue #34), read from the
status before and after it and the Kubernetes Events it records, so the workflow notifies from one place
(its commit) instead of at every decision that moves an upgrade:

- started: a pending cluster appears beside the active one (not the first deployment, which has no active);
- step: the traffic routed to the pending cluster grows (NewClusterWithIncrementalUpgrade);
- paused: the UpgradeControl condition turns to a pause (the `pause` control, a step plan's indefinite
  pause, a blue-green upgrade awaiting `promote`);
- failed: a Warning Event that judges the upgrade failing (an analysis gate, a deadline, an unhealthy or
  crash-looping new cluster, an impossible rollback) or the RayService's initialization timed out;
- promoted: the pending cluster becomes the active one;
- rolled-back: the pending cluster is dropped with the active one kept, or the active cluster switches back
  to the one it replaced (a failed post-promotion analysis).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from models.meta import ConditionStatus
from models.notify import NotifyEvent
from models.rayservice import RayServiceStatuses
from wire.notify import Details, NotifyMoment
from workflows.decisions.rayservice.conditions import REASON_INITIALIZING_TIMEOUT, RayServiceEvent
from workflows.decisions.rayservice.upgrade.analysis import REASON_ANALYSIS_FAILED
from workflows.decisions.rayservice.upgrade.blue_green import REASON_AWAITING_PROMOTION
from workflows.decisions.rayservice.upgrade.controls import (
    REASON_PAUSED_BY_CONTROL,
    UPGRADE_CONTROL_CONDITION,
)
from workflows.decisions.rayservice.upgrade.crash_loop import REASON_HEAD_POD_CRASH_LOOP
from workflows.decisions.rayservice.upgrade.incremental import REASON_ROLLBACK_IMPOSSIBLE
from workflows.decisions.rayservice.upgrade.progress_deadline import REASON_PROGRESS_DEADLINE_EXCEEDED
from workflows.decisions.rayservice.upgrade.step_deadline import REASON_STEP_DEADLINE_EXCEEDED
from workflows.decisions.rayservice.upgrade.step_plan import REASON_PAUSED_BY_PLAN
from workflows.decisions.rayservice.upgrade.unhealthy import REASON_NEW_CLUSTER_UNHEALTHY

__all__ = ["FAILURE_REASONS", "PAUSE_REASONS", "rayservice_notifications"]

PAUSE_REASONS: Final = frozenset({REASON_PAUSED_BY_CONTROL, REASON_PAUSED_BY_PLAN, REASON_AWAITING_PROMOTION})
FAILURE_REASONS: Final = frozenset(
    {
        REASON_ANALYSIS_FAILED,
        REASON_PROGRESS_DEADLINE_EXCEEDED,
        REASON_STEP_DEADLINE_EXCEEDED,
        REASON_NEW_CLUSTER_UNHEALTHY,
        REASON_HEAD_POD_CRASH_LOOP,
        REASON_ROLLBACK_IMPOSSIBLE,
        REASON_INITIALIZING_TIMEOUT,
    }
)


def _pause_reason(status: RayServiceStatuses) -> str | None:
    for condition in status.conditions:
        if condition.type == UPGRADE_CONTROL_CONDITION and condition.status == ConditionStatus.TRUE:
            return condition.reason if condition.reason in PAUSE_REASONS else None
    return None


def _pause_message(status: RayServiceStatuses) -> str:
    found = (c.message for c in status.conditions if c.type == UPGRADE_CONTROL_CONDITION)
    return next(found, "") or "The upgrade is paused."


def rayservice_notifications(
    before: RayServiceStatuses, after: RayServiceStatuses, events: Sequence[RayServiceEvent]
) -> list[NotifyMoment]:
    """The notifications of one committed change, in the order they happened."""
    was_active, was_pending = before.active_service_status, before.pending_service_status
    active, pending = after.active_service_status, after.pending_service_status
    moments: list[NotifyMoment] = []
    if active.ray_cluster_name and pending.ray_cluster_name and not was_pending.ray_cluster_name:
        moments.append(
            NotifyMoment(
                NotifyEvent.STARTED,
                f"Upgrade started: RayCluster {pending.ray_cluster_name} is made to replace "
                f"{active.ray_cluster_name}.",
                {"activeCluster": active.ray_cluster_name, "pendingCluster": pending.ray_cluster_name},
            )
        )
    same_pending = pending.ray_cluster_name and pending.ray_cluster_name == was_pending.ray_cluster_name
    traffic, was_traffic = pending.traffic_routed_percent or 0, was_pending.traffic_routed_percent or 0
    if same_pending and traffic > was_traffic:
        moments.append(
            NotifyMoment(
                NotifyEvent.STEP,
                f"{traffic}% of the traffic goes to RayCluster {pending.ray_cluster_name}.",
                {
                    "activeCluster": active.ray_cluster_name,
                    "pendingCluster": pending.ray_cluster_name,
                    "trafficPercent": traffic,
                },
            )
        )
    paused = _pause_reason(after)
    if paused is not None and paused != _pause_reason(before):
        moments.append(NotifyMoment(NotifyEvent.PAUSED, _pause_message(after), {"reason": paused}))
    for event in events:
        if event.type == "Warning" and event.reason in FAILURE_REASONS:
            moments.append(NotifyMoment(NotifyEvent.FAILED, event.message, {"reason": event.reason}))
    replaced = was_active.ray_cluster_name
    if replaced and active.ray_cluster_name and active.ray_cluster_name != replaced:
        details: Details = {"activeCluster": active.ray_cluster_name, "previousCluster": replaced}
        if active.ray_cluster_name == was_pending.ray_cluster_name:
            message = f"RayCluster {active.ray_cluster_name} is promoted: it serves all the traffic."
            moments.append(NotifyMoment(NotifyEvent.PROMOTED, message, details))
        else:
            message = f"Switched back to RayCluster {active.ray_cluster_name} from {replaced}."
            moments.append(NotifyMoment(NotifyEvent.ROLLED_BACK, message, details))
    elif replaced and active.ray_cluster_name == replaced and was_pending.ray_cluster_name:
        dropped = was_pending.ray_cluster_name
        if not pending.ray_cluster_name:
            message = f"Rolled back: RayCluster {replaced} still serves; the upgrade to {dropped} is dropped."
            dropped_details: Details = {"activeCluster": replaced, "droppedCluster": dropped}
            moments.append(NotifyMoment(NotifyEvent.ROLLED_BACK, message, dropped_details))
    return moments
