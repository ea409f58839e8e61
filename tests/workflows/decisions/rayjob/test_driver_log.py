"""Logs after teardown: which status change saves a driver log (`driver_log_to_save`), and the
`DriverLogSaved` condition that says what was saved where."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.meta import ConditionStatus
from models.rayjob import JobFailedReason, RayJobStatus
from wire.driver_log import DriverLogSaved
from workflows.decisions.rayjob.driver_log import (
    DRIVER_LOG_CONDITION,
    REASON_NO_DRIVER_LOG,
    REASON_NOT_SAVED,
    REASON_STORED,
    REASON_TAIL_SAVED,
    driver_log_condition,
    driver_log_not_saved_condition,
    driver_log_to_save,
    saved_tail,
)

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def status(
    deployment: str, job_status: str = "", job_id: str = "job-1", cluster: str = "c-1"
) -> RayJobStatus:
    return RayJobStatus.model_validate(
        {
            "jobDeploymentStatus": deployment,
            "jobStatus": job_status,
            "jobId": job_id,
            "rayClusterName": cluster,
        }
    )


def unreachable(failed: RayJobStatus) -> RayJobStatus:
    return failed.model_copy(update={"reason": JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED})


@pytest.mark.parametrize(
    ("previous", "new", "saved"),
    [
        # The Ray job failed: its attempt fails (or retries) and its log is saved.
        (status("Running", "RUNNING"), status("Failed", "FAILED"), "job-1"),
        (status("Running", "RUNNING"), status("Retrying", "FAILED"), "job-1"),
        # A deadline fails a Ray job still running: its log so far.
        (status("Running", "RUNNING"), status("Failed", "RUNNING"), "job-1"),
        (status("Running", "STOPPED"), status("Failed", "STOPPED"), "job-1"),
        # Nothing failed.
        (status("Running", "RUNNING"), status("Complete", "SUCCEEDED"), None),
        (status("Running", "RUNNING"), status("Running", "RUNNING"), None),
        (status("Initializing"), status("Running", "PENDING"), None),
        (status("Running", "RUNNING"), status("Suspending", "RUNNING"), None),
        # Once per failed attempt: a status written again within Failed or Retrying saves nothing more.
        (status("Failed", "FAILED"), status("Failed", "FAILED"), None),
        (status("Retrying", "FAILED"), status("Retrying", "FAILED"), None),
        (status("Failed", "FAILED"), status("Retrying", "FAILED"), None),
        # No Ray job the dashboard knows of: failed before submission, no cluster, no id.
        (status("Initializing"), status("Failed", ""), None),
        (status("Running", "RUNNING"), status("Failed", "FAILED", cluster=""), None),
        (status("Running", "RUNNING"), status("Failed", "FAILED", job_id=""), None),
        (status(""), status("ValidationFailed"), None),
        # The dashboard failed every check until the timeout: nothing to read the log from.
        (status("Running", "RUNNING"), unreachable(status("Failed", "RUNNING")), None),
        (status("Running", "RUNNING"), unreachable(status("Retrying", "RUNNING")), None),
    ],
)
def test_a_driver_log_is_saved_once_when_an_attempt_has_just_failed(
    previous: RayJobStatus, new: RayJobStatus, saved: str | None
) -> None:
    assert driver_log_to_save(previous, new) == saved


@pytest.mark.parametrize(
    ("previous", "new", "saved"),
    [
        # With a log store every ended attempt keeps its log: a success too, once.
        (status("Running", "RUNNING"), status("Complete", "SUCCEEDED"), "job-1"),
        (status("Complete", "SUCCEEDED"), status("Complete", "SUCCEEDED"), None),
        (status("Running", "RUNNING"), status("Failed", "FAILED"), "job-1"),
        (status("Retrying", "FAILED"), status("Retrying", "FAILED"), None),
        (status("Running", "RUNNING"), status("Running", "RUNNING"), None),
        (status("Running", "RUNNING"), status("Complete", "SUCCEEDED", job_id=""), None),
    ],
)
def test_with_a_log_store_every_ended_attempt_saves_its_log_once(
    previous: RayJobStatus, new: RayJobStatus, saved: str | None
) -> None:
    assert driver_log_to_save(previous, new, keeps_every_log=True) == saved


@pytest.mark.parametrize(
    ("saved", "condition_status", "reason", "says"),
    [
        (
            DriverLogSaved(found=True, total_bytes=300, tail="a\nb", stored="s3://logs/default/x/job-1.log"),
            ConditionStatus.TRUE,
            REASON_STORED,
            "Ray job job-1: full log (300 bytes) at s3://logs/default/x/job-1.log; last lines:",
        ),
        (
            DriverLogSaved(found=True, total_bytes=300, tail="a\nb"),
            ConditionStatus.TRUE,
            REASON_TAIL_SAVED,
            "Ray job job-1: full log not kept: no log store configured; last lines:",
        ),
        (
            DriverLogSaved(
                found=True, total_bytes=300, tail="a\nb", store_error="HTTP 403:\n<Error>Denied</Error>"
            ),
            ConditionStatus.TRUE,
            REASON_TAIL_SAVED,
            "Ray job job-1: full log not kept: HTTP 403: <Error>Denied</Error>; last lines:",
        ),
        (
            DriverLogSaved(found=False),
            ConditionStatus.FALSE,
            REASON_NO_DRIVER_LOG,
            "Ray job job-1 has no driver log on the dashboard",
        ),
    ],
)
def test_the_condition_says_what_was_kept_where_then_the_last_lines(
    saved: DriverLogSaved, condition_status: ConditionStatus, reason: str, says: str
) -> None:
    condition = driver_log_condition("job-1", saved, NOW)
    assert (condition.type, condition.status, condition.reason) == (
        DRIVER_LOG_CONDITION,
        condition_status,
        reason,
    )
    header = condition.message.split("\n", 1)[0]
    assert header == says
    assert saved_tail(condition) == ("a\nb" if saved.found else None)


def test_a_save_that_failed_says_why_on_one_line_and_holds_no_tail() -> None:
    condition = driver_log_not_saved_condition("job-1", "dashboard: HTTP 502:\nbad gateway", NOW)
    assert (condition.status, condition.reason) == (ConditionStatus.FALSE, REASON_NOT_SAVED)
    assert (
        condition.message == "the driver log of Ray job job-1 was not saved: dashboard: HTTP 502: bad gateway"
    )
    assert saved_tail(condition) is None
