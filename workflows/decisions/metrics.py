"""Which metric values a status change records (pure): RayJob states, retries, outcomes and deletion actions;
RayService upgrades, their traffic and capacity, and rollbacks. The names are those of `wire.metrics`.

Workflows hand each status change to these functions and record the points through the SDK's replay-safe
metric meter (`workflows.kit.metrics`), so the values come from the same status the `status` query shows.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from models.meta import find_condition, is_condition_true
from models.operator import OperatorConfig
from models.rayjob import DeletionPolicyType, JobDeploymentStatus, RayJob, RayJobStatus
from models.rayservice import RayServiceConditionType, RayServiceStatus, RayServiceStatuses
from wire import metrics as m
from wire.metrics import MetricPoint
from workflows.decisions.rayjob.deletion import (
    DeletionMechanism,
    deletion_mechanism,
    is_deletion_rule_matched,
)

NO_REASON = "None"


def _seconds(delta: timedelta) -> float:
    return max(delta.total_seconds(), 0.0)


def rayjob_status_points(
    previous: RayJobStatus, new: RayJobStatus, entered_at: datetime | None, now: datetime
) -> tuple[MetricPoint, ...]:
    """What a RayJob status change records: leaving a jobDeploymentStatus (time spent in it since
    `entered_at`), entering one (a retry, a final outcome with its reason), and a new Ray job status."""
    points: list[MetricPoint] = []
    old_state, new_state = previous.job_deployment_status, new.job_deployment_status
    if new_state != old_state:
        if entered_at is not None and old_state != JobDeploymentStatus.NEW:
            spent = _seconds(now - entered_at)
            points.append(MetricPoint(m.RAYJOB_STATE_SECONDS, spent, {"deployment_status": old_state.value}))
        if new_state != JobDeploymentStatus.NEW:
            points.append(MetricPoint(m.RAYJOB_STATE_ENTERED, 1, {"deployment_status": new_state.value}))
        if new_state == JobDeploymentStatus.RETRYING:
            points.append(MetricPoint(m.RAYJOB_RETRIES, 1))
        if new_state in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED):
            reason = new.reason.value if new.reason is not None else NO_REASON
            labels = {"deployment_status": new_state.value, "reason": reason}
            points.append(MetricPoint(m.RAYJOB_FINISHED, 1, labels))
    if new.job_status != previous.job_status and new.job_status.value:
        points.append(MetricPoint(m.RAYJOB_JOB_STATUS_CHANGES, 1, {"job_status": new.job_status.value}))
    return tuple(points)


def deletion_due_at(job: RayJob, policy: DeletionPolicyType, config: OperatorConfig) -> datetime | None:
    """When `policy` became due: endTime + the TTL of the earliest matching rule with that policy (deletion
    rules), else endTime + ttlSecondsAfterFinished. None without an endTime."""
    end = job.status.end_time
    if end is None:
        return None
    if deletion_mechanism(job, config) == DeletionMechanism.DELETION_RULES:
        strategy = job.spec.deletion_strategy
        rules = strategy.deletion_rules if strategy is not None else []
        ttls = [
            rule.condition.ttl_seconds
            for rule in rules
            if rule.policy == policy and is_deletion_rule_matched(rule, job)
        ]
        return end + timedelta(seconds=min(ttls)) if ttls else None
    return end + timedelta(seconds=job.spec.ttl_seconds_after_finished)


def deletion_action_points(
    job: RayJob, policy: DeletionPolicyType, now: datetime, config: OperatorConfig
) -> tuple[MetricPoint, ...]:
    """A deletion action about to run: counted by policy, with its lag after the due time."""
    labels = {"policy": policy.value}
    points = [MetricPoint(m.RAYJOB_DELETION_ACTIONS, 1, labels)]
    due = deletion_due_at(job, policy, config)
    if due is not None:
        points.append(MetricPoint(m.RAYJOB_DELETION_LAG_SECONDS, _seconds(now - due), labels))
    return tuple(points)


def _side_points(namespace: str, name: str, side: str, status: RayServiceStatus) -> list[MetricPoint]:
    labels = {"ray_namespace": namespace, "rayservice": name, "side": side}
    traffic = status.traffic_routed_percent if status.ray_cluster_name else 0
    capacity = status.target_capacity if status.ray_cluster_name else 0
    return [
        MetricPoint(m.RAYSERVICE_TRAFFIC_PERCENT, float(traffic or 0), labels),
        MetricPoint(m.RAYSERVICE_CAPACITY_PERCENT, float(capacity or 0), labels),
    ]


def _upgrading(status: RayServiceStatuses) -> bool:
    return is_condition_true(status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS)


def rayservice_status_points(
    namespace: str, name: str, previous: RayServiceStatuses, new: RayServiceStatuses, now: datetime
) -> tuple[MetricPoint, ...]:
    """What a RayService status change records: whether an upgrade runs, the traffic and capacity of each side
    (incremental upgrades fill them; 0 when a side has no cluster), an upgrade's end (its outcome and
    duration) and the start of a rollback (its reason)."""
    identity = {"ray_namespace": namespace, "rayservice": name}
    upgrading = _upgrading(new)
    points = [MetricPoint(m.RAYSERVICE_UPGRADE_IN_PROGRESS, 1.0 if upgrading else 0.0, identity)]
    points += _side_points(namespace, name, "active", new.active_service_status)
    points += _side_points(namespace, name, "pending", new.pending_service_status)
    if _upgrading(previous) and not upgrading:
        pending = previous.pending_service_status.ray_cluster_name
        completed = bool(pending) and new.active_service_status.ray_cluster_name == pending
        outcome = {"outcome": "completed" if completed else "abandoned"}
        points.append(MetricPoint(m.RAYSERVICE_UPGRADES_FINISHED, 1, outcome))
        began = find_condition(previous.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS)
        if began is not None and began.last_transition_time is not None:
            duration = _seconds(now - began.last_transition_time)
            points.append(MetricPoint(m.RAYSERVICE_UPGRADE_SECONDS, duration, outcome))
    rollback = RayServiceConditionType.ROLLBACK_IN_PROGRESS
    if is_condition_true(new.conditions, rollback) and not is_condition_true(previous.conditions, rollback):
        condition = find_condition(new.conditions, rollback)
        reason = condition.reason if condition is not None and condition.reason else NO_REASON
        points.append(MetricPoint(m.RAYSERVICE_ROLLBACKS, 1, {"reason": reason}))
    return tuple(points)
