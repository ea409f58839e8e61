"""A Running RayJob: the submitter's state (K8sJobMode Job, SidecarMode container) and the Ray job's info
decide Complete / Failed / stay, with KubeRay's reasons and messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.raycluster import RayClusterStatus
from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJob
from tests.workflows.decisions.rayjob.rayjobs import rayjob
from workflows.decisions.rayjob.observations import (
    JobInfo,
    JobInfoResult,
    JobInfoUnavailable,
    JobNotFound,
    SubmitterState,
    k8s_job_submitter_state,
    sidecar_submitter_state,
)
from workflows.decisions.rayjob.running import next_running_status, status_after_http_submission

NOW = datetime(2025, 6, 1, 12, 0, 0, 500000, tzinfo=UTC)
READY = RayClusterStatus(state="ready")


def submitter_status(**fields: Any) -> dict[str, Any]:
    return {"status": {"containerStatuses": [{"name": "ray-head"}, {"name": "ray-job-submitter", **fields}]}}


# checkIsRestartCountExceeded (backoff limit 2): 1 restart -> no; 2 -> yes; exited 0 -> never.
@pytest.mark.parametrize(
    ("restart_count", "exit_code", "failed"),
    [(1, 1, False), (2, 1, True), (3, 0, False)],
)
def test_sidecar_restart_count_exceeded(restart_count: int, exit_code: int, failed: bool) -> None:
    pod = submitter_status(
        restartCount=restart_count,
        state={"terminated": {"exitCode": exit_code}},
        lastState={"terminated": {"exitCode": 1}},
    )
    state = sidecar_submitter_state(pod, submitter_restart_enabled=True, submitter_backoff_limit=2)
    assert state.failed == failed
    if failed:
        assert state.failure_message == (
            "Ray head pod submitter container ray-job-submitter terminated after exceeding the maximum "
            "restart count"
        )


def test_sidecar_restarts_counted_only_after_a_termination() -> None:
    pod = submitter_status(restartCount=5, state={"running": {}})
    assert not sidecar_submitter_state(pod, submitter_restart_enabled=True).failed
    pod = submitter_status(restartCount=2, state={"running": {}}, lastState={"terminated": {"exitCode": 1}})
    assert sidecar_submitter_state(pod, submitter_restart_enabled=True).failed  # default limit 2


@pytest.mark.parametrize(
    ("container_state", "failed", "message", "finished"),
    [
        ({"running": {}}, False, "", None),
        (
            {"terminated": {"exitCode": 0, "finishedAt": "2025-06-01T11:59:00Z"}},
            False,
            "",
            datetime(2025, 6, 1, 11, 59, tzinfo=UTC),
        ),
        (
            {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2025-06-01T11:59:00Z"}},
            True,
            "Ray head pod container ray-job-submitter terminated with exit code 1: Error",
            datetime(2025, 6, 1, 11, 59, tzinfo=UTC),
        ),
    ],
)
def test_sidecar_submitter_without_restarts(
    container_state: dict[str, Any], failed: bool, message: str, finished: datetime | None
) -> None:
    state = sidecar_submitter_state(submitter_status(state=container_state), submitter_restart_enabled=False)
    assert state == SubmitterState(failed=failed, failure_message=message, finished_at=finished)


def test_sidecar_head_pod_missing() -> None:
    assert sidecar_submitter_state(None, submitter_restart_enabled=False) == SubmitterState(
        head_pod_missing=True
    )
    assert sidecar_submitter_state({"status": {}}, submitter_restart_enabled=False) == SubmitterState()


@pytest.mark.parametrize(
    ("conditions", "failed", "finished"),
    [
        ([], False, None),
        (
            [{"type": "FailureTarget", "status": "True", "lastTransitionTime": "2025-06-01T11:00:00Z"}],
            False,
            None,
        ),
        (
            [{"type": "Complete", "status": "True", "lastTransitionTime": "2025-06-01T11:00:00Z"}],
            False,
            "11:00:00",
        ),
        ([{"type": "Failed", "status": "False", "lastTransitionTime": "2025-06-01T11:00:00Z"}], False, None),
        (
            [
                {"type": "FailureTarget", "status": "True", "lastTransitionTime": "2025-06-01T10:59:00Z"},
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                    "lastTransitionTime": "2025-06-01T11:00:00Z",
                },
            ],
            True,
            "11:00:00",
        ),
    ],
)
def test_k8s_job_submitter_state(
    conditions: list[dict[str, Any]], failed: bool, finished: str | None
) -> None:
    state = k8s_job_submitter_state({"conditions": conditions})
    assert state.failed == failed
    assert (state.finished_at.strftime("%H:%M:%S") if state.finished_at else None) == finished
    if failed:
        assert state.failure_message == (
            "Job submission has failed. Reason: BackoffLimitExceeded. "
            "Message: Job has reached the specified backoff limit"
        )
    assert k8s_job_submitter_state(None) == SubmitterState()


def running_job(mode: str, **status: Any) -> RayJob:
    return rayjob(
        {"submissionMode": mode, "entrypoint": "python x.py"},
        {
            "jobId": "rj-abcde",
            "jobDeploymentStatus": "Running",
            "startTime": "2025-06-01T11:00:00Z",
            "message": "previous message",
            **status,
        },
    )


FINISHED = SubmitterState(finished_at=NOW - timedelta(seconds=5))
NOT_FINISHED = SubmitterState()
INFO_RUNNING = JobInfo(JobStatus.RUNNING, "Job is running", start_time_ms=1748775600123)
INFO_SUCCEEDED = JobInfo(JobStatus.SUCCEEDED, "Job finished successfully.", 1748775600123, 1748779140999)
INFO_FAILED = JobInfo(
    JobStatus.FAILED, "Job entrypoint command failed with exit code 1", 1748775600123, 1748779140999
)


@pytest.mark.parametrize(
    ("mode", "submitter", "info", "deployment", "reason", "message", "job_status"),
    [
        ("HTTPMode", None, INFO_RUNNING, "Running", None, "Job is running", JobStatus.RUNNING),
        (
            "HTTPMode",
            None,
            INFO_SUCCEEDED,
            "Complete",
            None,
            "Job finished successfully.",
            JobStatus.SUCCEEDED,
        ),
        ("HTTPMode", None, INFO_FAILED, "Failed", "AppFailed", INFO_FAILED.message, JobStatus.FAILED),
        (
            "InteractiveMode",
            None,
            INFO_SUCCEEDED,
            "Complete",
            None,
            INFO_SUCCEEDED.message,
            JobStatus.SUCCEEDED,
        ),
        # With a submitter, a terminal Ray job completes only once the submitter finished too.
        (
            "K8sJobMode",
            NOT_FINISHED,
            INFO_SUCCEEDED,
            "Running",
            None,
            INFO_SUCCEEDED.message,
            JobStatus.SUCCEEDED,
        ),
        (
            "K8sJobMode",
            FINISHED,
            INFO_SUCCEEDED,
            "Complete",
            None,
            INFO_SUCCEEDED.message,
            JobStatus.SUCCEEDED,
        ),
        ("SidecarMode", FINISHED, INFO_FAILED, "Failed", "AppFailed", INFO_FAILED.message, JobStatus.FAILED),
        ("SidecarMode", NOT_FINISHED, INFO_FAILED, "Running", None, INFO_FAILED.message, JobStatus.FAILED),
    ],
)
def test_job_info_decides(
    mode: str,
    submitter: SubmitterState | None,
    info: JobInfo,
    deployment: str,
    reason: str | None,
    message: str,
    job_status: JobStatus,
) -> None:
    job = running_job(mode, jobStatusCheckFailureStartTime="2025-06-01T11:58:00Z")
    decision = next_running_status(job, NOW, cluster_status=READY, submitter=submitter, job_info=info)
    status = decision.status
    assert not decision.submit_job
    assert status.job_deployment_status == JobDeploymentStatus(deployment)
    assert status.reason == (JobFailedReason(reason) if reason else None)
    assert status.message == message
    assert status.job_status == job_status
    assert status.job_status_check_failure_start_time is None  # a successful check clears the clock
    assert status.ray_cluster_status == READY
    assert status.ray_job_info.start_time == datetime(
        2025, 6, 1, 11, 0, 0, tzinfo=UTC
    )  # ms, persisted to seconds
    expected_end = datetime(2025, 6, 1, 11, 59, 0, tzinfo=UTC) if info.end_time_ms else None
    assert status.ray_job_info.end_time == expected_end


def test_job_info_without_times_keeps_the_previous_ones() -> None:
    job = running_job("HTTPMode", rayJobInfo={"startTime": "2025-06-01T11:00:01Z"})
    status = next_running_status(
        job, NOW, cluster_status=READY, submitter=None, job_info=JobInfo(JobStatus.PENDING)
    ).status
    assert status.ray_job_info.start_time == datetime(2025, 6, 1, 11, 0, 1, tzinfo=UTC)
    assert status.job_status == JobStatus.PENDING


@pytest.mark.parametrize(
    ("previous_job_status", "reason", "message"),
    [
        ("", "SubmissionFailed", "Job submission has failed. Reason: BackoffLimitExceeded. Message: limit"),
        (
            "RUNNING",
            "SubmissionFailed",
            "Job submission has failed. Reason: BackoffLimitExceeded. Message: limit",
        ),
        ("FAILED", "AppFailed", "previous message"),  # the application failed: its message stays
    ],
)
def test_failed_submitter(previous_job_status: str, reason: str, message: str) -> None:
    submitter = SubmitterState(
        failed=True,
        failure_message="Job submission has failed. Reason: BackoffLimitExceeded. Message: limit",
        finished_at=NOW - timedelta(seconds=10),
    )
    job = running_job("K8sJobMode", jobStatus=previous_job_status)
    status = next_running_status(
        job, NOW, cluster_status=READY, submitter=submitter, job_info=INFO_RUNNING
    ).status
    assert status.job_deployment_status == JobDeploymentStatus.FAILED
    assert status.reason == JobFailedReason(reason)
    assert status.message == message


def test_submitter_finished_30_seconds_ago_overrides_everything() -> None:
    submitter = SubmitterState(
        failed=True, failure_message="x", finished_at=NOW - timedelta(seconds=30, microseconds=1)
    )
    status = next_running_status(
        running_job("K8sJobMode"), NOW, cluster_status=READY, submitter=submitter, job_info=INFO_RUNNING
    ).status
    assert status.job_deployment_status == JobDeploymentStatus.FAILED
    assert status.job_status == JobStatus.FAILED
    assert status.reason == JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED
    assert status.message == (
        "The RayJob submitter finished at 2025-06-01 11:59:30 but the ray job did not reach terminal state "
        "within 30s"
    )


@pytest.mark.parametrize(
    ("previous_job_status", "job_info"),
    [
        ("SUCCEEDED", INFO_RUNNING),  # seen terminal by an earlier look
        ("RUNNING", INFO_SUCCEEDED),  # seen terminal by this look
    ],
)
def test_a_late_look_does_not_fail_a_job_that_finished_in_time(
    previous_job_status: str, job_info: JobInfoResult
) -> None:
    """The workflow looked minutes after the submitter finished (its worker was busy), but the Ray job had
    succeeded: Complete, not "did not reach terminal state within 30s"."""
    submitter = SubmitterState(finished_at=NOW - timedelta(minutes=5))
    job = running_job("K8sJobMode", jobStatus=previous_job_status)
    decision = next_running_status(job, NOW, cluster_status=READY, submitter=submitter, job_info=job_info)
    status = decision.status
    assert status.reason != JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED
    if job_info is INFO_SUCCEEDED:
        assert (status.job_deployment_status, status.job_status) == (
            JobDeploymentStatus.COMPLETE,
            JobStatus.SUCCEEDED,
        )


def test_sidecar_head_pod_missing_fails_the_job() -> None:
    status = next_running_status(
        running_job("SidecarMode"),
        NOW,
        cluster_status=READY,
        submitter=SubmitterState(head_pod_missing=True),
        job_info=INFO_RUNNING,
    ).status
    assert (status.job_deployment_status, status.reason, status.message) == (
        JobDeploymentStatus.FAILED,
        JobFailedReason.APP_FAILED,
        "Ray head pod not found.",
    )


@pytest.mark.parametrize(
    ("mode", "submitter", "submit", "deployment", "message"),
    [
        ("HTTPMode", None, True, "Running", "previous message"),  # resubmit over HTTP
        ("K8sJobMode", NOT_FINISHED, False, "Running", "previous message"),  # the submitter may still submit
        ("K8sJobMode", FINISHED, False, "Failed", "Submitter completed but Ray job not found in RayCluster."),
        (
            "SidecarMode",
            FINISHED,
            False,
            "Failed",
            "Submitter completed but Ray job not found in RayCluster.",
        ),
        ("InteractiveMode", None, False, "Running", "previous message"),
    ],
)
def test_job_not_found(
    mode: str, submitter: SubmitterState | None, submit: bool, deployment: str, message: str
) -> None:
    job = running_job(mode)
    decision = next_running_status(
        job, NOW, cluster_status=READY, submitter=submitter, job_info=JobNotFound()
    )
    assert decision.submit_job == submit
    assert decision.status.job_deployment_status == JobDeploymentStatus(deployment)
    assert decision.status.message == message
    if deployment == "Failed":
        assert decision.status.reason == JobFailedReason.APP_FAILED


@pytest.mark.parametrize(
    ("mode", "seen", "deployment", "reason"),
    [
        ("K8sJobMode", "SUCCEEDED", "Complete", None),
        ("SidecarMode", "SUCCEEDED", "Complete", None),
        ("K8sJobMode", "FAILED", "Failed", JobFailedReason.APP_FAILED),
        ("HTTPMode", "SUCCEEDED", "Complete", None),  # not submitted again
    ],
)
def test_a_job_seen_terminal_then_not_found_keeps_its_outcome(
    mode: str, seen: str, deployment: str, reason: JobFailedReason | None
) -> None:
    """A stale or lost "not found" after a terminal status was seen: the job ended as it was seen."""
    job = running_job(mode, jobStatus=seen, message="Job finished.")
    submitter = None if mode == "HTTPMode" else FINISHED
    decision = next_running_status(
        job, NOW, cluster_status=READY, submitter=submitter, job_info=JobNotFound()
    )
    assert not decision.submit_job
    assert decision.status.job_deployment_status == JobDeploymentStatus(deployment)
    assert decision.status.job_status == JobStatus(seen)
    assert decision.status.reason == reason
    assert decision.status.message == "Job finished."


def test_failing_status_checks_start_the_clock_once() -> None:
    job = running_job("HTTPMode")
    first = next_running_status(
        job, NOW, cluster_status=READY, submitter=None, job_info=JobInfoUnavailable("503")
    )
    assert first.status.job_status_check_failure_start_time == datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
    assert first.status.job_deployment_status == JobDeploymentStatus.RUNNING
    later = NOW + timedelta(seconds=40)
    again = next_running_status(
        job.model_copy(update={"status": first.status}),
        later,
        cluster_status=READY,
        submitter=None,
        job_info=JobInfoUnavailable("503"),
    )
    assert (
        again.status.job_status_check_failure_start_time == first.status.job_status_check_failure_start_time
    )


def test_http_resubmission_outcome() -> None:
    status = running_job("HTTPMode", jobStatusCheckFailureStartTime="2025-06-01T11:58:00Z").status
    assert (
        status_after_http_submission(status, NOW, submitted=True).job_status_check_failure_start_time is None
    )
    kept = status_after_http_submission(status, NOW, submitted=False)
    assert kept.job_status_check_failure_start_time == datetime(2025, 6, 1, 11, 58, tzinfo=UTC)
    fresh = status_after_http_submission(running_job("HTTPMode").status, NOW, submitted=False)
    assert fresh.job_status_check_failure_start_time == datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
