"""The progress deadline of `raypilot.io/rollout` (issue #18): how long the new cluster of an upgrade may
take to become ready, and what happens past it. raypilot's own (KubeRay waits forever); named after
Deployment's `progressDeadlineSeconds`.

The clock starts when the upgrade began (UpgradeInProgress turned True) and stops for good once the pending
cluster was ready (every Serve application RUNNING with its replicas). Past the deadline: `Abort` rolls back
as the `abort` control does (RollbackInProgress, reason ProgressDeadlineExceeded; the spec is not tried
again until a different one is applied), `Degraded` only says so and keeps waiting. Both record a Warning
Event and the raypilot condition `RolloutProgressing` (False, ProgressDeadlineExceeded); a pending cluster
that becomes ready in time sets it True (NewClusterReady).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from models.meta import ConditionStatus, is_condition_true
from models.rayservice import RayServiceConditionType, RayServiceStatuses
from models.rollout import OnProgressDeadline
from workflows.decisions.rayservice.conditions import RayServiceEvent
from workflows.decisions.rayservice.upgrade.automatic_rollback import (
    ROLLOUT_PROGRESSING_CONDITION,  # named here too: the condition this deadline sets, as callers know it
    rollback_or_keep_waiting,
    with_rollout_progressing,
)
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls

__all__ = [
    "REASON_NEW_CLUSTER_READY",
    "REASON_PROGRESS_DEADLINE_EXCEEDED",
    "ROLLOUT_PROGRESSING_CONDITION",
    "DeadlineVerdict",
    "deadline_exceeded",
    "new_cluster_ready_in_time",
    "progress_deadline_verdict",
]

REASON_PROGRESS_DEADLINE_EXCEEDED: Final = "ProgressDeadlineExceeded"
REASON_NEW_CLUSTER_READY: Final = "NewClusterReady"
Type = RayServiceConditionType


@dataclass(frozen=True)
class DeadlineVerdict:
    """`wait` until `due_at`; `ready`: the pending cluster made it (the clock stops); `exceeded`: act now;
    `none`: nothing to watch (no upgrade, no deadline, a rollback, or this cluster was settled already)."""

    verdict: Literal["none", "wait", "ready", "exceeded"]
    due_at: datetime | None = None


def progress_deadline_verdict(
    status: RayServiceStatuses,
    deadline_seconds: int | None,
    ready_cluster: str,
    settled_cluster: str,
    now: datetime,
) -> DeadlineVerdict:
    """The deadline's verdict at the end of a pass. `ready_cluster` is the pending cluster of an upgrade that
    this pass found ready ("" for none; it may have been promoted in the same pass), `settled_cluster` the
    one whose deadline was settled already (ready in time, or exceeded and acted on)."""
    if deadline_seconds is not None and ready_cluster and ready_cluster != settled_cluster:
        return DeadlineVerdict("ready")
    pending = status.pending_service_status.ray_cluster_name
    upgrading = next(
        (
            c
            for c in status.conditions
            if c.type == Type.UPGRADE_IN_PROGRESS and c.status == ConditionStatus.TRUE
        ),
        None,
    )
    if (
        deadline_seconds is None
        or upgrading is None
        or upgrading.last_transition_time is None
        or not pending
        or pending == settled_cluster
        or is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS)
    ):
        return DeadlineVerdict("none")
    due = upgrading.last_transition_time + timedelta(seconds=deadline_seconds)
    if now < due:
        return DeadlineVerdict("wait", due)
    return DeadlineVerdict("exceeded")


def new_cluster_ready_in_time(status: RayServiceStatuses, cluster: str, now: datetime) -> RayServiceStatuses:
    message = f"RayCluster {cluster} became ready within progressDeadlineSeconds."
    return with_rollout_progressing(status, ConditionStatus.TRUE, REASON_NEW_CLUSTER_READY, message, now)


def deadline_exceeded(
    status: RayServiceStatuses,
    controls: UpgradeControls,
    on_deadline: OnProgressDeadline,
    deadline_seconds: int,
    goal_hash: str,
    now: datetime,
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    """The status, controls and Warning Event past the deadline: a rollback (Abort) or only the condition
    (Degraded). `goal_hash` is the spec being upgraded to (an aborted one is not tried again)."""
    cluster = status.pending_service_status.ray_cluster_name
    seen = f"RayCluster {cluster} was not ready {deadline_seconds} s after the upgrade began"
    return rollback_or_keep_waiting(
        status, controls, on_deadline, REASON_PROGRESS_DEADLINE_EXCEEDED, seen, goal_hash, now
    )
