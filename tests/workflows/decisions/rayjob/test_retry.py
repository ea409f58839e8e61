"""Counters, retries and endTime (checkBackoffLimitAndUpdateStatusIfNeeded, updateRayJobStatus' endTime,
and the reset of the Suspending/Retrying branch)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJobSpec, RayJobStatus
from workflows.decisions.rayjob.retry import (
    count_attempt_outcome,
    settle_transition,
    should_retry,
    status_after_resources_released,
)

NOW = datetime(2025, 2, 3, 4, 5, 6, 700000, tzinfo=UTC)


def status(**fields: Any) -> RayJobStatus:
    return RayJobStatus.model_validate(fields)


@pytest.mark.parametrize(
    ("deployment", "job_status", "failed", "succeeded"),
    [
        ("Failed", "FAILED", 1, 0),
        ("Failed", "", 1, 0),  # a deployment failure counts even without a Ray job outcome
        ("Complete", "SUCCEEDED", 0, 1),
        ("Complete", "STOPPED", 0, 0),  # a stopped job completes without counting as a success
        ("Running", "SUCCEEDED", 0, 0),
    ],
)
def test_count_attempt_outcome(deployment: str, job_status: str, failed: int, succeeded: int) -> None:
    counted = count_attempt_outcome(status(jobDeploymentStatus=deployment, jobStatus=job_status, failed=0))
    assert (counted.failed, counted.succeeded) == (failed, succeeded)


@pytest.mark.parametrize(
    ("backoff_limit", "failed_so_far", "reason", "retries"),
    [
        (0, 1, "AppFailed", False),  # one attempt only
        (1, 1, "AppFailed", True),
        (1, 2, "AppFailed", False),  # backoffLimit + 1 attempts used
        (2, 2, "SubmissionFailed", True),
        (2, 1, "PreRunningDeadlineExceeded", True),
        (2, 1, "JobDeploymentStatusTransitionGracePeriodExceeded", True),
        (2, 1, "DeadlineExceeded", False),
        (2, 1, "JobStatusCheckTimeoutExceeded", False),
    ],
)
def test_should_retry(backoff_limit: int, failed_so_far: int, reason: str, retries: bool) -> None:
    spec = RayJobSpec(backoff_limit=backoff_limit)
    assert (
        should_retry(spec, status(jobDeploymentStatus="Failed", failed=failed_so_far, reason=reason))
        == retries
    )


def test_settle_turns_a_retryable_failure_into_retrying_without_end_time() -> None:
    spec = RayJobSpec(backoff_limit=1)
    previous = status(jobDeploymentStatus="Running")
    failed = status(jobDeploymentStatus="Failed", reason="AppFailed", jobStatus="FAILED")
    settled = settle_transition(spec, previous, failed, NOW)
    assert settled.job_deployment_status == JobDeploymentStatus.RETRYING
    assert settled.failed == 1
    assert settled.end_time is None


def test_settle_stamps_end_time_on_terminal_states() -> None:
    spec = RayJobSpec()
    settled = settle_transition(
        spec,
        status(jobDeploymentStatus="Running"),
        status(jobDeploymentStatus="Complete", jobStatus="SUCCEEDED"),
        NOW,
    )
    assert settled.succeeded == 1
    assert settled.end_time == datetime(2025, 2, 3, 4, 5, 6, tzinfo=UTC)


def test_settle_without_a_deployment_change_counts_nothing() -> None:
    same = status(jobDeploymentStatus="Running", jobStatus="RUNNING", message="new")
    assert settle_transition(RayJobSpec(), status(jobDeploymentStatus="Running"), same, NOW) == same


def test_settle_suspending_is_not_an_outcome() -> None:
    settled = settle_transition(
        RayJobSpec(), status(jobDeploymentStatus="Running"), status(jobDeploymentStatus="Suspending"), NOW
    )
    assert (settled.failed, settled.succeeded, settled.end_time) == (0, 0, None)


@pytest.mark.parametrize(("before", "after"), [("Suspending", "Suspended"), ("Retrying", "")])  # "" is New
def test_release_resets_the_attempt_and_keeps_the_history(before: str, after: str) -> None:
    attempt = status(
        jobDeploymentStatus=before,
        jobId="rj-aaaaa",
        rayClusterName="rj-bbbbb",
        dashboardURL="rj-bbbbb-head-svc.ns.svc.cluster.local:8265",
        jobStatus="FAILED",
        reason="AppFailed",
        message="boom",
        rayJobInfo={"startTime": "2025-02-03T04:00:00Z"},
        rayClusterStatus={"state": "ready"},
        jobStatusCheckFailureStartTime="2025-02-03T04:01:00Z",
        startTime="2025-02-03T03:59:00Z",
        failed=1,
        succeeded=0,
        observedGeneration=3,
    )
    released = status_after_resources_released(attempt)
    assert released.job_deployment_status == JobDeploymentStatus(after)
    assert (released.job_id, released.ray_cluster_name, released.dashboard_url, released.message) == (
        "",
        "",
        "",
        "",
    )
    assert released.job_status == JobStatus.NEW
    assert released.reason is None
    assert released.ray_job_info.start_time is None
    assert released.ray_cluster_status.state == ""
    assert released.job_status_check_failure_start_time is None
    assert released.failed == 1
    assert released.observed_generation == 3
    assert released.start_time == attempt.start_time
    assert released.reason != JobFailedReason.APP_FAILED
