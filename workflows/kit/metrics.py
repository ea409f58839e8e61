"""Recording metric points from a workflow through the SDK's replay-safe meter.

`workflow.metric_meter()` records nothing while the workflow replays its history (after a worker restart, a
cache eviction, or on every task with the cache off), so each point counts once. The SDK's meter adds the
Temporal namespace, task queue and workflow type to every point.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from temporalio import workflow
from temporalio.common import MetricMeter

with workflow.unsafe.imports_passed_through():
    from models.operator import OperatorConfig
    from models.rayjob import DeletionPolicyType, RayJob, RayJobStatus
    from models.rayservice import RayServiceStatuses
    from wire.metrics import SPECS, MetricPoint
    from workflows.decisions.metrics import (
        deletion_action_points,
        rayjob_status_points,
        rayservice_status_points,
    )


def record_points(meter: MetricMeter, points: Iterable[MetricPoint]) -> None:
    """Adds each point to its counter, sets its gauge or observes it in its histogram."""
    for point in points:
        spec = SPECS[point.name]
        attributes = dict(point.labels)
        if spec.kind == "counter":
            meter.create_counter(spec.name, spec.description, spec.unit or None).add(
                int(point.value), attributes
            )
        elif spec.kind == "gauge":
            meter.create_gauge_float(spec.name, spec.description, spec.unit or None).set(
                point.value, attributes
            )
        else:
            meter.create_histogram_float(spec.name, spec.description, spec.unit or None).record(
                point.value, attributes
            )


def record(points: Iterable[MetricPoint]) -> None:
    """Records points from workflow code (nothing while replaying)."""
    record_points(workflow.metric_meter(), points)


class RayJobMetrics:
    """A RayJob workflow's metrics: remembers when the current jobDeploymentStatus began (rebuilt by replay,
    as all workflow memory) to time each state."""

    def __init__(self) -> None:
        self.entered_at: datetime | None = None

    def status_changed(self, previous: RayJobStatus, new: RayJobStatus) -> None:
        now = workflow.now()
        record(rayjob_status_points(previous, new, self.entered_at, now))
        if new.job_deployment_status != previous.job_deployment_status:
            self.entered_at = now

    def deletion_action(self, job: RayJob, policy: DeletionPolicyType, config: OperatorConfig) -> None:
        record(deletion_action_points(job, policy, workflow.now(), config))


def rayservice_status_changed(
    namespace: str, name: str, previous: RayServiceStatuses, new: RayServiceStatuses
) -> None:
    record(rayservice_status_points(namespace, name, previous, new, workflow.now()))
