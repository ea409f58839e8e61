"""Statuses: times in RFC3339 UTC, foreign statuses tolerate unknown keys, ours do not, Go-like dumps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from models import (
    Condition,
    ConditionStatus,
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    RayClusterStatus,
    RayJobStatus,
    RayServiceConditionType,
    RayServiceStatuses,
    dump_manifest,
    dump_status,
    format_rfc3339,
    is_condition_true,
    is_job_deployment_terminal,
    is_job_terminal,
)
from tests.workflows.decisions.rayservice.conditions import the_condition


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T12:00:00Z", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T14:00:00+02:00", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T12:00:00.250Z", datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)),
        ("2026-03-01T12:00:00", datetime(2026, 3, 1, 12, tzinfo=UTC)),
    ],
)
def test_times_parse_rfc3339_into_utc(text: str, expected: datetime) -> None:
    status = RayJobStatus.model_validate({"startTime": text})
    assert status.start_time == expected
    assert status.start_time is not None
    assert status.start_time.tzinfo is not None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 3, 1, 12, tzinfo=UTC), "2026-03-01T12:00:00Z"),
        (datetime(2026, 3, 1, 14, tzinfo=timezone(timedelta(hours=2))), "2026-03-01T12:00:00Z"),
        (datetime(2026, 3, 1, 12, 0, 0, 500000, tzinfo=UTC), "2026-03-01T12:00:00.5Z"),
    ],
)
def test_times_serialize_as_rfc3339_utc_z(value: datetime, expected: str) -> None:
    assert format_rfc3339(value) == expected
    assert dump_manifest(RayJobStatus(end_time=value)) == {"endTime": expected}


def test_time_round_trips() -> None:
    data = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": "2026-03-01T12:00:00Z",
                "reason": "NonZeroServeEndpoints",
                "message": "",
                "observedGeneration": 2,
            }
        ]
    }
    assert dump_manifest(RayServiceStatuses.model_validate(data)) == data


def test_raycluster_status_ignores_unknown_keys() -> None:
    status = RayClusterStatus.model_validate(
        {
            "state": "ready",
            "head": {"podIP": "10.0.0.1", "futureField": 1},
            "somethingNew": {"a": 1},
            "desiredCPU": "2",
            "desiredMemory": "4Gi",
            "readyWorkerReplicas": 1,
        }
    )
    assert status.state == "ready"
    assert status.head.pod_ip == "10.0.0.1"
    assert status.desired_cpu == "2"


def test_raycluster_status_keeps_unknown_state_values() -> None:
    assert RayClusterStatus.model_validate({"state": "unhealthy"}).state == "unhealthy"


@pytest.mark.parametrize("model", [RayJobStatus, RayServiceStatuses])
def test_our_statuses_reject_unknown_keys(model: type[RayJobStatus] | type[RayServiceStatuses]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate({"bogus": 1})


def test_empty_reason_means_no_reason() -> None:
    assert RayJobStatus.model_validate({"reason": ""}).reason is None
    assert RayJobStatus.model_validate({"reason": "AppFailed"}).reason is JobFailedReason.APP_FAILED


def test_rayjob_status_defaults() -> None:
    status = RayJobStatus()
    assert status.job_status is JobStatus.NEW
    assert status.job_deployment_status is JobDeploymentStatus.NEW
    assert (status.succeeded, status.failed) == (0, 0)


def test_dump_status_omits_empty_values_like_go() -> None:
    status = RayJobStatus(
        job_id="sample-abcde",
        job_deployment_status=JobDeploymentStatus.RUNNING,
        start_time=datetime(2026, 3, 1, 12, tzinfo=UTC),
    )
    assert dump_status(status) == {
        "jobId": "sample-abcde",
        "jobDeploymentStatus": "Running",
        "startTime": "2026-03-01T12:00:00Z",
        "succeeded": 0,
        "failed": 0,
    }


def test_dump_status_keeps_zero_of_go_pointer_fields() -> None:
    statuses = RayServiceStatuses.model_validate(
        {
            "activeServiceStatus": {"rayClusterName": "a", "targetCapacity": 0, "trafficRoutedPercent": 0},
            "numServeEndpoints": 0,
        }
    )
    assert dump_status(statuses) == {
        "activeServiceStatus": {"rayClusterName": "a", "targetCapacity": 0, "trafficRoutedPercent": 0}
    }


def test_dump_status_keeps_condition_fields() -> None:
    statuses = RayServiceStatuses(
        conditions=[Condition(type="Ready", status=ConditionStatus.FALSE, reason="Initializing", message="")]
    )
    dumped = dump_status(statuses)
    assert dumped["conditions"] == [
        {"type": "Ready", "status": "False", "reason": "Initializing", "message": ""}
    ]


def test_condition_helpers() -> None:
    conditions = [
        Condition(type=RayServiceConditionType.READY, status=ConditionStatus.TRUE),
        Condition(type=RayServiceConditionType.UPGRADE_IN_PROGRESS, status=ConditionStatus.FALSE),
    ]
    assert is_condition_true(conditions, RayServiceConditionType.READY)
    assert not is_condition_true(conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS)
    assert not is_condition_true(conditions, RayServiceConditionType.SUSPENDED)
    found = the_condition(conditions, "UpgradeInProgress")
    assert found.status is ConditionStatus.FALSE


@pytest.mark.parametrize(
    ("status", "terminal"),
    [
        (JobStatus.NEW, False),
        (JobStatus.PENDING, False),
        (JobStatus.RUNNING, False),
        (JobStatus.STOPPED, True),
        (JobStatus.SUCCEEDED, True),
        (JobStatus.FAILED, True),
    ],
)
def test_is_job_terminal(status: JobStatus, terminal: bool) -> None:
    assert is_job_terminal(status) is terminal


@pytest.mark.parametrize("status", list(JobDeploymentStatus))
def test_is_job_deployment_terminal(status: JobDeploymentStatus) -> None:
    terminal = {JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED}
    assert is_job_deployment_terminal(status) is (status in terminal)
