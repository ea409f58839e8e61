"""Which metric values a status change records (pure decisions of `workflows.decisions.metrics`) and how a
failed activity attempt is labelled (`activities.metrics`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.errors import http_error
from activities.metrics import activity_error_point
from models.operator import OperatorConfig
from models.rayjob import DeletionPolicyType, RayJob, RayJobStatus
from models.rayservice import RayServiceStatuses
from wire import metrics as m
from wire.metrics import MetricPoint
from workflows.decisions.metrics import (
    deletion_action_points,
    rayjob_status_points,
    rayservice_status_points,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _job_status(**fields: Any) -> RayJobStatus:
    return RayJobStatus.model_validate(fields)


def _points(points: tuple[MetricPoint, ...]) -> list[tuple[str, float, dict[str, str]]]:
    return [(point.name, point.value, dict(point.labels)) for point in points]


@pytest.mark.parametrize(
    ("previous", "new", "expected"),
    [
        (  # the first state: entered, nothing left
            {},
            {"jobDeploymentStatus": "Initializing"},
            [(m.RAYJOB_STATE_ENTERED, 1, {"deployment_status": "Initializing"})],
        ),
        (  # leaving Running after 90 s for Complete; the Ray job succeeded on the way
            {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"},
            {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"},
            [
                (m.RAYJOB_STATE_SECONDS, 90.0, {"deployment_status": "Running"}),
                (m.RAYJOB_STATE_ENTERED, 1, {"deployment_status": "Complete"}),
                (m.RAYJOB_FINISHED, 1, {"deployment_status": "Complete", "reason": "None"}),
                (m.RAYJOB_JOB_STATUS_CHANGES, 1, {"job_status": "SUCCEEDED"}),
            ],
        ),
        (  # a failure with its reason
            {"jobDeploymentStatus": "Running"},
            {"jobDeploymentStatus": "Failed", "reason": "DeadlineExceeded"},
            [
                (m.RAYJOB_STATE_SECONDS, 90.0, {"deployment_status": "Running"}),
                (m.RAYJOB_STATE_ENTERED, 1, {"deployment_status": "Failed"}),
                (m.RAYJOB_FINISHED, 1, {"deployment_status": "Failed", "reason": "DeadlineExceeded"}),
            ],
        ),
        (  # a retry
            {"jobDeploymentStatus": "Running"},
            {"jobDeploymentStatus": "Retrying"},
            [
                (m.RAYJOB_STATE_SECONDS, 90.0, {"deployment_status": "Running"}),
                (m.RAYJOB_STATE_ENTERED, 1, {"deployment_status": "Retrying"}),
                (m.RAYJOB_RETRIES, 1, {}),
            ],
        ),
        (  # a status change within the same state records only the Ray job's new status
            {"jobDeploymentStatus": "Running", "jobStatus": "PENDING"},
            {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"},
            [(m.RAYJOB_JOB_STATUS_CHANGES, 1, {"job_status": "RUNNING"})],
        ),
        ({"jobDeploymentStatus": "Running"}, {"jobDeploymentStatus": "Running"}, []),
    ],
)
def test_a_rayjob_status_change_records(
    previous: dict[str, Any], new: dict[str, Any], expected: list[tuple[str, float, dict[str, str]]]
) -> None:
    points = rayjob_status_points(_job_status(**previous), _job_status(**new), T0, T0 + timedelta(seconds=90))
    assert _points(points) == expected


def _finished_job(**spec: Any) -> RayJob:
    return RayJob.model_validate(
        {
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {"entrypoint": "x", **spec},
            "status": {
                "jobDeploymentStatus": "Complete",
                "jobStatus": "SUCCEEDED",
                "endTime": T0.isoformat(),
            },
        }
    )


@pytest.mark.parametrize(
    ("spec", "policy", "lag"),
    [
        (
            {"shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 10},
            DeletionPolicyType.DELETE_CLUSTER,
            2.5,
        ),
        (  # deletion rules: the due time of the rule with that policy that matches
            {
                "deletionStrategy": {
                    "deletionRules": [
                        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
                        {
                            "policy": "DeleteCluster",
                            "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 10},
                        },
                        {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 1}},
                    ]
                }
            },
            DeletionPolicyType.DELETE_CLUSTER,
            2.5,
        ),
    ],
)
def test_a_deletion_action_records_its_policy_and_lag(
    spec: dict[str, Any], policy: DeletionPolicyType, lag: float
) -> None:
    job = _finished_job(**spec)
    now = T0 + timedelta(seconds=12.5)
    points = deletion_action_points(job, policy, now, OperatorConfig())
    assert _points(points) == [
        (m.RAYJOB_DELETION_ACTIONS, 1, {"policy": policy.value}),
        (m.RAYJOB_DELETION_LAG_SECONDS, lag, {"policy": policy.value}),
    ]


def _service(
    active: str, pending: str = "", *, upgrading: bool = False, rollback: str = ""
) -> RayServiceStatuses:
    conditions: list[dict[str, Any]] = [
        {
            "type": "UpgradeInProgress",
            "status": "True" if upgrading else "False",
            "reason": "x",
            "lastTransitionTime": T0.isoformat(),
        }
    ]
    if rollback:
        conditions.append({"type": "RollbackInProgress", "status": "True", "reason": rollback})
    return RayServiceStatuses.model_validate(
        {
            "conditions": conditions,
            "activeServiceStatus": {
                "rayClusterName": active,
                "trafficRoutedPercent": 60,
                "targetCapacity": 100,
            },
            "pendingServiceStatus": {
                "rayClusterName": pending,
                "trafficRoutedPercent": 40,
                "targetCapacity": 50,
            }
            if pending
            else {},
        }
    )


def _by_name(points: tuple[MetricPoint, ...]) -> dict[tuple[str, str], tuple[float, dict[str, str]]]:
    return {(p.name, p.labels.get("side", "")): (p.value, dict(p.labels)) for p in points}


def test_an_incremental_upgrade_step_records_traffic_and_capacity_of_both_sides() -> None:
    before = _service("a", "b", upgrading=True)
    points = _by_name(rayservice_status_points("ns", "svc", before, before, T0))
    assert points[(m.RAYSERVICE_UPGRADE_IN_PROGRESS, "")][0] == 1.0
    assert points[(m.RAYSERVICE_TRAFFIC_PERCENT, "active")][0] == 60.0
    assert points[(m.RAYSERVICE_TRAFFIC_PERCENT, "pending")] == (
        40.0,
        {"ray_namespace": "ns", "rayservice": "svc", "side": "pending"},
    )
    assert points[(m.RAYSERVICE_CAPACITY_PERCENT, "pending")][0] == 50.0
    assert m.RAYSERVICE_UPGRADES_FINISHED not in {name for name, _ in points}


def test_the_end_of_an_upgrade_records_its_outcome_and_duration() -> None:
    later = T0 + timedelta(minutes=5)
    completed = rayservice_status_points(
        "ns", "svc", _service("a", "b", upgrading=True), _service("b"), later
    )
    assert _by_name(completed)[(m.RAYSERVICE_UPGRADES_FINISHED, "")] == (1, {"outcome": "completed"})
    assert _by_name(completed)[(m.RAYSERVICE_UPGRADE_SECONDS, "")] == (300.0, {"outcome": "completed"})
    # No pending side any more: its traffic and capacity read 0 rather than keeping the last step's values.
    assert _by_name(completed)[(m.RAYSERVICE_TRAFFIC_PERCENT, "pending")][0] == 0.0
    abandoned = rayservice_status_points(
        "ns", "svc", _service("a", "b", upgrading=True), _service("a"), later
    )
    assert _by_name(abandoned)[(m.RAYSERVICE_UPGRADES_FINISHED, "")] == (1, {"outcome": "abandoned"})


def test_a_rollback_is_counted_once_with_its_reason() -> None:
    rolling = _service("a", "b", upgrading=True, rollback="TargetClusterChanged")
    started = rayservice_status_points("ns", "svc", _service("a", "b", upgrading=True), rolling, T0)
    assert _by_name(started)[(m.RAYSERVICE_ROLLBACKS, "")] == (1, {"reason": "TargetClusterChanged"})
    assert (m.RAYSERVICE_ROLLBACKS, "") not in _by_name(
        rayservice_status_points("ns", "svc", rolling, rolling, T0)
    )


@pytest.mark.parametrize(
    ("activity_type", "error", "labels"),
    [
        (
            "k8s.create_raycluster",
            http_error("kubernetes", 403, "create RayCluster"),
            {"kind": "kubernetes", "error_type": "KubernetesForbidden", "http_status": "403"},
        ),
        (
            "dashboard.get_job_info",
            http_error("dashboard", 503, "job info", "Bearer abc"),
            {"kind": "dashboard", "error_type": "DashboardUnavailable", "http_status": "503"},
        ),
        (
            "gateway.create_httproute",
            ApplicationError("unreachable", type="KubernetesUnreachable"),
            {"kind": "gateway", "error_type": "KubernetesUnreachable", "http_status": "none"},
        ),
        ("raypilot.read_operator_config", ValueError("x"), {"kind": "other", "error_type": "ValueError"}),
    ],
)
def test_a_failed_activity_attempt_is_labelled_by_kind_type_and_status(
    activity_type: str, error: BaseException, labels: dict[str, str]
) -> None:
    point = activity_error_point(activity_type, error)
    assert point.name == m.ACTIVITY_ERRORS
    assert point.labels["activity"] == activity_type
    assert {key: point.labels[key] for key in labels} == labels
