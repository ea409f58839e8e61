"""NewClusterWithIncrementalUpgrade: how traffic and target_capacity move between the two clusters.

KubeRay counterparts (rayservice_controller.go, utils/util.go):
- `initial_pending_target_capacity`: the targetCapacity calculateStatus gives a new pending cluster
- `traffic_step`: calculateTrafficRoutedPercent
- `next_capacity`: reconcileServeTargetCapacity (which side, which goal)
- `capacity_step`: reconcileServe(pending) then reconcileServe(active), in KubeRay's per-pass order
- `target_capacity_update_needed`: checkIfNeedTargetCapacityUpdate (exact reasons)
- `is_incremental_upgrade_complete`: utils.IsIncrementalUpgradeComplete
- `rollback_state`: reconcileRollbackState
- `should_complete_incremental_rollback`, `complete_incremental_rollback`: shouldCompleteIncrementalRollback
  and the rollback-completion block of calculateStatus

Where raypilot differs, deliberately (event-driven instead of a 2 s poll):
- `traffic_step` also returns `next_step_at`, the exact instant the next traffic step is due
  (lastTrafficMigratedTime + intervalSeconds), so the workflow arms one durable timer.
- `capacity_step` takes `gaining_cluster_ready`: a capacity step waits until the cluster that gains capacity
  (pending on upgrade, active on rollback) runs its current target capacity, not merely until Serve accepted
  the PUT. Rollback traffic likewise waits for the active cluster to be ready (`active_ready`, default True
  = KubeRay).
- `paused` freezes both; `promote` (the contract's control) skips intervals and step sizes but keeps the order
  capacity -> readiness -> traffic, so traffic never goes to replicas that do not run.
- `rollback_state` takes `aborted_goal_hash` (the `abort` control): that goal keeps rolling back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from models.meta import ConditionStatus, is_condition_true
from models.rayservice import (
    ClusterUpgradeOptions,
    RayServiceConditionReason,
    RayServiceConditionType,
    RayServiceStatus,
    RayServiceStatuses,
)
from workflows.decisions.rayservice.conditions import remove_condition, set_condition

__all__ = [
    "MESSAGE_ROLLBACK_COMPLETE",
    "MESSAGE_ROLLBACK_GOAL_CHANGED",
    "MESSAGE_ROLLBACK_REVERTED",
    "MESSAGE_UPGRADE_ABORTED",
    "REASON_ROLLBACK_IMPOSSIBLE",
    "REASON_UPGRADE_ABORTED",
    "CapacityStep",
    "Side",
    "TrafficMoment",
    "TrafficStep",
    "capacity_step",
    "complete_incremental_rollback",
    "initial_pending_target_capacity",
    "is_incremental_upgrade_complete",
    "next_capacity",
    "rollback_state",
    "should_complete_incremental_rollback",
    "target_capacity_update_needed",
    "traffic_step",
]

Side = Literal["active", "pending"]
Type = RayServiceConditionType

MESSAGE_ROLLBACK_REVERTED: Final = "Goal state reverted to original cluster, rolling back."
MESSAGE_ROLLBACK_GOAL_CHANGED: Final = "Goal state changed mid-upgrade, rolling back to original cluster."
MESSAGE_ROLLBACK_COMPLETE: Final = "Rollback complete, active Ray cluster exists and no pending Ray cluster"
# The Warning Event of an incremental upgrade whose active cluster is gone.
REASON_ROLLBACK_IMPOSSIBLE: Final = "RollbackImpossible"
REASON_UPGRADE_ABORTED: Final = "UpgradeAborted"  # raypilot's reason for a rollback started by `abort`
MESSAGE_UPGRADE_ABORTED: Final = "Upgrade aborted by the abort control, rolling back to the active cluster."
_OPTIONS_MISSING: Final = "ClusterUpgradeOptions are not set during upgrade."


def _rolling_back(status: RayServiceStatuses) -> bool:
    return is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS)


def _required(value: int | None, field: str) -> int:
    if value is None:
        raise ValueError(f"clusterUpgradeOptions.{field} is not set")
    return value


def initial_pending_target_capacity(status: RayServiceStatuses) -> int | None:
    """targetCapacity of a pending cluster just chosen: 100 on first deployment (no active cluster yet), 0
    for an upgrade; an already set value is kept (None = leave unchanged)."""
    if status.active_service_status.ray_cluster_name == "":
        return 100 if status.active_service_status.target_capacity is None else None
    return 0 if status.pending_service_status.target_capacity is None else None


@dataclass(frozen=True)
class TrafficStep:
    active_weight: int
    pending_weight: int
    moved: bool  # the weights differ from the status' trafficRoutedPercent
    next_step_at: datetime | None  # when the next traffic step is due; None when waiting on something else
    waiting_for: Literal["", "capacity", "interval", "readiness", "paused", "step"]


@dataclass(frozen=True)
class TrafficMoment:
    """What the traffic decision looks at besides the status: the upgrade options, the time, whether each
    cluster serves, and the operator's controls (`pause`, `promote`)."""

    options: ClusterUpgradeOptions | None
    now: datetime
    pending_ready: bool
    active_ready: bool = True
    paused: bool = False
    promote: bool = False
    # raypilot.io/rollout (step_plan.py): the pending weight the step plan allows now; None = KubeRay's steps.
    plan_target: int | None = None


def traffic_step(status: RayServiceStatuses, moment: TrafficMoment) -> TrafficStep:
    """calculateTrafficRoutedPercent: the HTTPRoute weights (active, pending) for this moment.

    Traffic moves stepSizePercent toward the cluster gaining it once per intervalSeconds (measured from that
    side's lastTrafficMigratedTime), never beyond its targetCapacity; during an upgrade only while the pending
    cluster is ready. Raises ValueError without clusterUpgradeOptions (KubeRay's error message).

    With a step plan (`moment.plan_target`, upgrade only, not on promote) the pending weight moves straight to
    the plan's target, capped by the pending capacity, with no interval: the plan's pauses set the pace.
    """
    active, pending = status.active_service_status, status.pending_service_status
    active_weight = 100 if active.traffic_routed_percent is None else active.traffic_routed_percent
    pending_weight = 0 if pending.traffic_routed_percent is None else pending.traffic_routed_percent
    if moment.options is None:
        raise ValueError(_OPTIONS_MISSING)
    pending_capacity = 0 if pending.target_capacity is None else pending.target_capacity
    active_capacity = 100 if active.target_capacity is None else active.target_capacity
    rolling_back = _rolling_back(status)

    def unchanged(
        waiting_for: Literal["capacity", "interval", "readiness", "paused"], next_at: datetime | None = None
    ) -> TrafficStep:
        return TrafficStep(active_weight, pending_weight, False, next_at, waiting_for)

    if (not rolling_back and pending_weight == pending_capacity) or (
        rolling_back and active_weight == active_capacity
    ):
        return unchanged("capacity")
    if moment.paused:
        return unchanged("paused")
    if moment.plan_target is not None and not rolling_back and not moment.promote:
        return _plan_traffic_step(
            (active_weight, pending_weight), pending_capacity, moment.plan_target, moment.pending_ready
        )
    interval = timedelta(seconds=_required(moment.options.interval_seconds, "intervalSeconds"))
    step = _required(moment.options.step_size_percent, "stepSizePercent")
    last = active.last_traffic_migrated_time if rolling_back else pending.last_traffic_migrated_time
    if not moment.promote and last is not None and moment.now - last < interval:
        return unchanged("interval", last + interval)
    if rolling_back:
        if not moment.active_ready:
            return unchanged("readiness")
        new_active = (
            min(100, active_capacity) if moment.promote else min(100, active_weight + step, active_capacity)
        )
        new_pending = 100 - new_active
        reached = new_active == active_capacity
    else:
        if not moment.pending_ready:
            return unchanged("readiness")
        new_pending = (
            min(100, pending_capacity)
            if moment.promote
            else min(100, pending_weight + step, pending_capacity)
        )
        new_active = 100 - new_pending
        reached = new_pending == pending_capacity
    moved = (new_active, new_pending) != (active_weight, pending_weight)
    next_at = None if reached or moment.promote else moment.now + interval
    return TrafficStep(new_active, new_pending, moved, next_at, "capacity" if reached else "interval")


def _plan_traffic_step(
    weights: tuple[int, int], pending_capacity: int, plan_target: int, pending_ready: bool
) -> TrafficStep:
    """A step plan's traffic move: up to min(plan target, pending capacity) at once, once the pending
    cluster is ready."""
    active_weight, pending_weight = weights
    if pending_weight >= plan_target:
        return TrafficStep(active_weight, pending_weight, False, None, "step")
    if not pending_ready:
        return TrafficStep(active_weight, pending_weight, False, None, "readiness")
    new_pending = min(plan_target, pending_capacity)
    waiting: Literal["capacity", "step"] = "capacity" if new_pending == pending_capacity else "step"
    return TrafficStep(100 - new_pending, new_pending, new_pending != pending_weight, None, waiting)


def next_capacity(
    status: RayServiceStatuses, options: ClusterUpgradeOptions | None, side: Side, promote: bool = False
) -> int | None:
    """reconcileServeTargetCapacity for one side: the new target_capacity of that cluster, or None for no
    change.

    Upgrade: only once traffic caught up with the pending capacity; then the active cluster shrinks by
    maxSurgePercent while the total exceeds 100, else the pending cluster grows by maxSurgePercent. Rollback
    is the mirror image, gated on the active traffic matching the active capacity. `promote` jumps to 0/100.
    """
    if options is None:
        raise ValueError("Missing RayService ClusterUpgradeOptions during upgrade")
    active, pending = status.active_service_status, status.pending_service_status
    active_capacity = 100 if active.target_capacity is None else active.target_capacity
    pending_capacity = 0 if pending.target_capacity is None else pending.target_capacity
    surge = 100 if promote else options.max_surge_percent
    total = active_capacity + pending_capacity
    if _rolling_back(status):
        active_traffic = 0 if active.traffic_routed_percent is None else active.traffic_routed_percent
        if active_capacity != active_traffic:
            return None
        if total > 100:
            return max(0, pending_capacity - surge) if side == "pending" else None
        return min(100, active_capacity + surge) if side == "active" else None
    pending_traffic = 0 if pending.traffic_routed_percent is None else pending.traffic_routed_percent
    if pending_capacity != pending_traffic:
        return None
    if side == "active" and total > 100:
        return max(0, active_capacity - surge)
    if side == "pending" and total <= 100:
        return min(100, pending_capacity + surge)
    return None


@dataclass(frozen=True)
class CapacityStep:
    side: Side
    goal: int


def capacity_step(
    status: RayServiceStatuses,
    options: ClusterUpgradeOptions | None,
    gaining_cluster_ready: bool,
    paused: bool = False,
    promote: bool = False,
) -> CapacityStep | None:
    """The next target_capacity change, in KubeRay's per-pass order (pending first, then active), or None.

    A goal equal to the current value is no step. Waits while paused or while the cluster gaining capacity
    does not yet run its current target capacity.
    """
    if paused or not gaining_cluster_ready:
        return None
    for side in ("pending", "active"):
        goal = next_capacity(status, options, side, promote)
        current = getattr(status, f"{side}_service_status").target_capacity
        if goal is not None and goal != current:
            return CapacityStep(side, goal)
    return None


def target_capacity_update_needed(
    status: RayServiceStatuses, gateway_ready: bool, http_route_ready: bool
) -> tuple[bool, str]:
    """checkIfNeedTargetCapacityUpdate: (should target_capacity still change?, KubeRay's reason)."""
    active, pending = status.active_service_status, status.pending_service_status
    if not active.ray_cluster_name or not pending.ray_cluster_name:
        return (
            False,
            "Both active and pending RayCluster instances are required for NewClusterWithIncrementalUpgrade.",
        )
    if not gateway_ready:
        return False, "Gateway for RayService NewClusterWithIncrementalUpgrade is not ready."
    if not http_route_ready:
        return False, "HTTPRoute for RayService NewClusterWithIncrementalUpgrade is not ready."
    if active.target_capacity is None or active.traffic_routed_percent is None:
        return True, "Active RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."
    if pending.target_capacity is None or pending.traffic_routed_percent is None:
        return True, "Pending RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."
    if _rolling_back(status):
        if active.target_capacity == 100 and pending.target_capacity == 0:
            return False, "Rollback complete: all traffic has been restored to the active cluster."
        return True, "Rollback in progress: traffic is being restored to the active cluster."
    if active.target_capacity == 0 and pending.target_capacity == 100:
        return False, (
            "All traffic has migrated to the upgraded cluster and "
            "NewClusterWithIncrementalUpgrade is complete."
        )
    if pending.target_capacity < 100 or pending.traffic_routed_percent < 100:
        return True, "Pending RayCluster has not finished scaling up."
    return True, "Active RayCluster TargetCapacity has not finished scaling down."


def is_incremental_upgrade_complete(status: RayServiceStatuses, pending_cluster_exists: bool) -> bool:
    """IsIncrementalUpgradeComplete: pending cluster exists, active capacity 0 and pending traffic 100."""
    return (
        pending_cluster_exists
        and status.active_service_status.target_capacity == 0
        and status.pending_service_status.traffic_routed_percent == 100
    )


def rollback_state(
    status: RayServiceStatuses,
    goal_hash: str,
    active_hash: str,
    pending_hash: str,
    now: datetime,
    aborted_goal_hash: str | None = None,
) -> RayServiceStatuses:
    """reconcileRollbackState (called only while upgrading with both clusters present).

    Goal == active cluster's spec -> start rolling back; goal == pending's -> cancel a rollback (unless that
    goal was aborted); any third spec -> roll back first (the fresh upgrade follows the rollback).
    """
    rolling_back = _rolling_back(status)
    result = status.model_copy(deep=True)

    def start(reason: str, message: str) -> RayServiceStatuses:
        if not rolling_back:
            result.conditions = set_condition(
                result.conditions,
                Type.ROLLBACK_IN_PROGRESS,
                ConditionStatus.TRUE,
                reason,
                message,
                result.observed_generation,
                now,
            )
        return result

    if aborted_goal_hash is not None and goal_hash == aborted_goal_hash:
        return start(REASON_UPGRADE_ABORTED, MESSAGE_UPGRADE_ABORTED)
    if goal_hash == active_hash:
        return start(RayServiceConditionReason.DESIRED_CLUSTER_SPEC_CHANGED, MESSAGE_ROLLBACK_REVERTED)
    if goal_hash == pending_hash:
        if rolling_back:
            result.conditions = remove_condition(result.conditions, Type.ROLLBACK_IN_PROGRESS)
        return result
    return start(RayServiceConditionReason.DESIRED_CLUSTER_SPEC_CHANGED, MESSAGE_ROLLBACK_GOAL_CHANGED)


def should_complete_incremental_rollback(
    active: RayServiceStatus, pending: RayServiceStatus, pending_head_ready: bool
) -> bool:
    """shouldCompleteIncrementalRollback: active back at 100/100 and the pending cluster either drained to
    0/0 or unable to take calls (no pending cluster, or its head Pod not ready)."""
    return (
        active.target_capacity == 100
        and active.traffic_routed_percent == 100
        and (not pending_head_ready or (pending.target_capacity == 0 and pending.traffic_routed_percent == 0))
    )


def complete_incremental_rollback(status: RayServiceStatuses, now: datetime) -> RayServiceStatuses:
    """The pending cluster is forgotten (it dangles and is cleaned up), RollbackInProgress removed, and
    UpgradeInProgress False/NoPendingCluster."""
    result = status.model_copy(deep=True)
    result.pending_service_status = RayServiceStatus()
    result.conditions = remove_condition(result.conditions, Type.ROLLBACK_IN_PROGRESS)
    result.conditions = set_condition(
        result.conditions,
        Type.UPGRADE_IN_PROGRESS,
        ConditionStatus.FALSE,
        RayServiceConditionReason.NO_PENDING_CLUSTER,
        MESSAGE_ROLLBACK_COMPLETE,
        result.observed_generation,
        now,
    )
    return result
