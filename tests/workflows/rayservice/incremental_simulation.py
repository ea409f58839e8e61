"""A whole incremental upgrade (or rollback) played through the real decisions, for tests and docs.

`expected_upgrade_steps` is KubeRay's e2e helper generateUpgradeSteps (test/e2eincrementalupgrade/support.go),
written independently: the sequence of target_capacity and traffic values an upgrade goes through for a given
maxSurgePercent and stepSizePercent. Two differences from the e2e helper, both matching what the controller
does: traffic never exceeds the pending target capacity, and the final "active capacity 0" step and the
promotion are listed. `simulate_upgrade` drives `incremental.capacity_step`, `incremental.traffic_step` and
the promotion / rollback-completion rules pass by pass with ideal clusters (always ready), advancing the
clock only to the next due traffic step, so each traffic step lands exactly intervalSeconds after the
previous one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from models.meta import Condition, ConditionStatus, is_condition_true
from models.rayservice import (
    ClusterUpgradeOptions,
    RayServiceConditionReason,
    RayServiceConditionType,
    RayServiceStatus,
    RayServiceStatuses,
)
from workflows.decisions.rayservice.upgrade.incremental import (
    TrafficMoment,
    capacity_step,
    complete_incremental_rollback,
    is_incremental_upgrade_complete,
    should_complete_incremental_rollback,
    traffic_step,
)

__all__ = [
    "UpgradeEvent",
    "expected_upgrade_steps",
    "simulate_upgrade",
    "upgrade_start_status",
]

EventKind = Literal["pending_capacity", "active_capacity", "traffic", "promote", "rollback_complete"]


@dataclass(frozen=True)
class UpgradeEvent:
    kind: EventKind
    value: int  # the new target capacity, the pending traffic percent, or 100 / 0 for promote / rollback
    at: datetime | None = None


def expected_upgrade_steps(max_surge_percent: int, step_size_percent: int) -> list[UpgradeEvent]:
    """generateUpgradeSteps: surge 50 / step 25 gives pending capacity 50, traffic 25, 50, active capacity 50,
    pending capacity 100, traffic 75, 100, active capacity 0, promote."""
    if max_surge_percent <= 0 or step_size_percent <= 0:
        raise ValueError("maxSurgePercent and stepSizePercent must be positive for an upgrade to progress")
    steps: list[UpgradeEvent] = []
    pending_capacity, pending_traffic, active_capacity = 0, 0, 100
    while pending_traffic < 100:
        if pending_traffic == pending_capacity:
            pending_capacity = min(pending_capacity + max_surge_percent, 100)
            steps.append(UpgradeEvent("pending_capacity", pending_capacity))
        while pending_traffic < pending_capacity:
            pending_traffic = min(pending_traffic + step_size_percent, pending_capacity)
            steps.append(UpgradeEvent("traffic", pending_traffic))
        if active_capacity + pending_capacity > 100:
            active_capacity = max(active_capacity - max_surge_percent, 0)
            steps.append(UpgradeEvent("active_capacity", active_capacity))
    steps.append(UpgradeEvent("promote", 100))
    return steps


@dataclass(frozen=True)
class TrafficStep:
    percent: int
    after_capacity: bool  # a capacity change came between this step and the traffic step before it


def traffic_steps(events: list[UpgradeEvent]) -> list[TrafficStep]:
    """The traffic steps of an upgrade's events, each saying whether it follows a capacity change."""
    steps: list[TrafficStep] = []
    capacity_changed = False
    for event in events:
        if event.kind == "traffic":
            steps.append(TrafficStep(event.value, capacity_changed and bool(steps)))
            capacity_changed = False
        elif event.kind in ("pending_capacity", "active_capacity"):
            capacity_changed = True
    return steps


def upgrade_start_status(active_cluster: str, pending_cluster: str, start: datetime) -> RayServiceStatuses:
    """Status just after the upgrade's HTTPRoute first listed the pending cluster: active 100/100, pending
    capacity 0 and traffic 0 (first read back at `start`), UpgradeInProgress True."""
    return RayServiceStatuses(
        conditions=[
            Condition(
                type=RayServiceConditionType.UPGRADE_IN_PROGRESS,
                status=ConditionStatus.TRUE,
                reason=RayServiceConditionReason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
                last_transition_time=start,
            )
        ],
        active_service_status=RayServiceStatus(
            ray_cluster_name=active_cluster, target_capacity=100, traffic_routed_percent=100
        ),
        pending_service_status=RayServiceStatus(
            ray_cluster_name=pending_cluster,
            target_capacity=0,
            traffic_routed_percent=0,
            last_traffic_migrated_time=start,
        ),
    )


def simulate_upgrade(
    status: RayServiceStatuses,
    options: ClusterUpgradeOptions,
    start: datetime,
    promote: bool = False,
    max_passes: int = 10_000,
) -> tuple[list[UpgradeEvent], RayServiceStatuses]:
    """Play passes from `status` at `start` until promotion (upgrade) or rollback completion
    (RollbackInProgress set). Returns the events with their times and the final status. Raises RuntimeError
    if nothing can move."""
    events: list[UpgradeEvent] = []
    now = start
    current = status.model_copy(deep=True)
    for _ in range(max_passes):
        step = capacity_step(current, options, gaining_cluster_ready=True, promote=promote)
        if step is not None:
            side = getattr(current, f"{step.side}_service_status")
            side.target_capacity = step.goal
            kind: EventKind = "pending_capacity" if step.side == "pending" else "active_capacity"
            events.append(UpgradeEvent(kind, step.goal, now))
        traffic = traffic_step(current, TrafficMoment(options, now, pending_ready=True, promote=promote))
        if traffic.moved:
            active, pending = current.active_service_status, current.pending_service_status
            if traffic.active_weight != active.traffic_routed_percent:
                active.traffic_routed_percent, active.last_traffic_migrated_time = traffic.active_weight, now
            if traffic.pending_weight != pending.traffic_routed_percent:
                pending.traffic_routed_percent, pending.last_traffic_migrated_time = (
                    traffic.pending_weight,
                    now,
                )
            events.append(UpgradeEvent("traffic", traffic.pending_weight, now))
        if is_condition_true(current.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS):
            if should_complete_incremental_rollback(
                current.active_service_status, current.pending_service_status, pending_head_ready=True
            ):
                events.append(UpgradeEvent("rollback_complete", 0, now))
                return events, complete_incremental_rollback(current, now)
        elif is_incremental_upgrade_complete(current, pending_cluster_exists=True):
            events.append(UpgradeEvent("promote", 100, now))
            return events, current
        if step is None and not traffic.moved:
            if traffic.next_step_at is None:
                raise RuntimeError(f"the upgrade cannot progress: waiting for {traffic.waiting_for}")
            now = traffic.next_step_at
    raise RuntimeError(f"the upgrade did not finish within {max_passes} passes")
