"""raypilot's own metrics: their names, kinds, labels and histogram buckets, and one recorded value.

The worker exports them on RAYPILOT_METRICS_PORT beside the Temporal SDK's own metrics, through the SDK's
metric meter (one Prometheus endpoint for both). Workflows record theirs through `workflow.metric_meter()`,
which records nothing while a workflow replays, so a value counts once however often its history is replayed;
activities through `activity.metric_meter()`; the worker's state gauges from Temporal's visibility store.

`deploy/grafana-dashboard.json` and `deploy/prometheus-alerts.yaml` may only query names of `EXPORTED` (a test
checks it). Counters carry no `_total` suffix: the SDK's exporter adds none by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

MetricKind = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: MetricKind
    description: str
    labels: tuple[str, ...] = ()
    unit: str = ""
    buckets: tuple[float, ...] = ()


@dataclass(frozen=True)
class MetricPoint:
    """One value to record: add it to a counter, set a gauge to it, or observe it in a histogram."""

    name: str
    value: float
    labels: Mapping[str, str] = field(default_factory=dict)


# Time in a state and upgrade durations span seconds to days; deletion lag should stay near zero.
_STATE_BUCKETS: Final = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 24 * 3600.0)
_LAG_BUCKETS: Final = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
_UPGRADE_BUCKETS: Final = (10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 6 * 3600.0)

# ---- RayJob ----
RAYJOBS: Final = "raypilot_rayjobs"
RAYJOB_STATE_ENTERED: Final = "raypilot_rayjob_state_entered"
RAYJOB_STATE_SECONDS: Final = "raypilot_rayjob_state_seconds"
RAYJOB_JOB_STATUS_CHANGES: Final = "raypilot_rayjob_job_status_changes"
RAYJOB_FINISHED: Final = "raypilot_rayjob_finished"
RAYJOB_RETRIES: Final = "raypilot_rayjob_retries"
RAYJOB_DELETION_ACTIONS: Final = "raypilot_rayjob_deletion_actions"
RAYJOB_DELETION_LAG_SECONDS: Final = "raypilot_rayjob_deletion_lag_seconds"
# ---- RayService ----
RAYSERVICES: Final = "raypilot_rayservices"
RAYSERVICE_UPGRADE_IN_PROGRESS: Final = "raypilot_rayservice_upgrade_in_progress"
RAYSERVICE_TRAFFIC_PERCENT: Final = "raypilot_rayservice_traffic_percent"
RAYSERVICE_CAPACITY_PERCENT: Final = "raypilot_rayservice_capacity_percent"
RAYSERVICE_UPGRADES_FINISHED: Final = "raypilot_rayservice_upgrades_finished"
RAYSERVICE_UPGRADE_SECONDS: Final = "raypilot_rayservice_upgrade_seconds"
RAYSERVICE_ROLLBACKS: Final = "raypilot_rayservice_rollbacks"
# ---- activities ----
ACTIVITY_ERRORS: Final = "raypilot_activity_errors"

EXPORTED: Final[tuple[MetricSpec, ...]] = (
    MetricSpec(RAYJOBS, "gauge", "Open RayJob workflows by jobDeploymentStatus", ("deployment_status",)),
    MetricSpec(
        RAYJOB_STATE_ENTERED, "counter", "RayJobs that entered a jobDeploymentStatus", ("deployment_status",)
    ),
    MetricSpec(
        RAYJOB_STATE_SECONDS,
        "histogram",
        "Time a RayJob spent in a jobDeploymentStatus, observed when it left it",
        ("deployment_status",),
        "s",
        _STATE_BUCKETS,
    ),
    MetricSpec(
        RAYJOB_JOB_STATUS_CHANGES, "counter", "Ray job status changes by the new status", ("job_status",)
    ),
    MetricSpec(
        RAYJOB_FINISHED,
        "counter",
        "RayJobs that reached Complete or Failed, by reason",
        ("deployment_status", "reason"),
    ),
    MetricSpec(RAYJOB_RETRIES, "counter", "RayJob retries (a new attempt after a failed one)"),
    MetricSpec(RAYJOB_DELETION_ACTIONS, "counter", "Deletion actions run, by policy", ("policy",)),
    MetricSpec(
        RAYJOB_DELETION_LAG_SECONDS,
        "histogram",
        "How late a deletion action ran after its due time (endTime + TTL)",
        ("policy",),
        "s",
        _LAG_BUCKETS,
    ),
    MetricSpec(RAYSERVICES, "gauge", "Open RayService workflows by RayPhase", ("phase",)),
    MetricSpec(
        RAYSERVICE_UPGRADE_IN_PROGRESS,
        "gauge",
        "1 while the RayService upgrades to a new cluster, else 0",
        ("ray_namespace", "rayservice"),
    ),
    MetricSpec(
        RAYSERVICE_TRAFFIC_PERCENT,
        "gauge",
        "Traffic routed to the active or pending cluster (incremental upgrades), in %",
        ("ray_namespace", "rayservice", "side"),
    ),
    MetricSpec(
        RAYSERVICE_CAPACITY_PERCENT,
        "gauge",
        "Target capacity of the active or pending cluster (incremental upgrades), in %",
        ("ray_namespace", "rayservice", "side"),
    ),
    MetricSpec(
        RAYSERVICE_UPGRADES_FINISHED,
        "counter",
        "Upgrades that ended: completed (the new cluster is active) or abandoned",
        ("outcome",),
    ),
    MetricSpec(
        RAYSERVICE_UPGRADE_SECONDS,
        "histogram",
        "Duration of an upgrade, from UpgradeInProgress to its end",
        ("outcome",),
        "s",
        _UPGRADE_BUCKETS,
    ),
    MetricSpec(RAYSERVICE_ROLLBACKS, "counter", "Rollbacks started, by reason", ("reason",)),
    MetricSpec(
        ACTIVITY_ERRORS,
        "counter",
        "Failed activity attempts by kind of I/O, activity, error type and HTTP status",
        ("kind", "activity", "error_type", "http_status"),
    ),
)

SPECS: Final[Mapping[str, MetricSpec]] = {spec.name: spec for spec in EXPORTED}


def histogram_buckets() -> dict[str, tuple[float, ...]]:
    """Bucket boundaries per histogram, for the exporter (`PrometheusConfig.histogram_bucket_overrides`)."""
    return {spec.name: spec.buckets for spec in EXPORTED if spec.kind == "histogram"}


def prometheus_series(spec: MetricSpec) -> tuple[str, ...]:
    """The series names Prometheus sees for a metric (a histogram is exported as three)."""
    if spec.kind == "histogram":
        return (f"{spec.name}_bucket", f"{spec.name}_sum", f"{spec.name}_count")
    return (spec.name,)
