"""What a Running RayJob becomes, given the submitter's state and the Ray job's info from the dashboard.

KubeRay function: the `JobDeploymentStatusRunning` branch of `RayJobReconciler.Reconcile` after its first four
checks (suspend, activeDeadlineSeconds, transition grace period, status-check timeout, which are
`rayjob_transitions.state_check_transition`), i.e. `checkSubmitterAndUpdateStatusIfNeeded`,
`checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded`, the `GetJobInfo` handling,
`reconcileHTTPModeJobNotFound`, `recordJobStatusCheckFailure` and `clearJobStatusCheckFailureTimer`.

Where raypilot differs: in HTTPMode KubeRay counts a resubmission answered "submission ID already used" as a
failed status check; raypilot's activity reports that answer as submitted (the job exists), and
`status_after_http_submission` is told only whether the job now exists. And a job seen terminal and then not
found keeps its terminal status (KubeRay fails a RayJob whose submitter finished and whose job is not found,
even one it saw SUCCEEDED: that loses the job's outcome).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from models.raycluster import RayClusterStatus
from models.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
    RayJob,
    RayJobInfo,
    RayJobStatus,
    is_job_terminal,
)
from workflows.decisions.rayjob.deadlines import submitter_finished_deadline
from workflows.decisions.rayjob.observations import (
    JobInfo,
    JobInfoResult,
    JobInfoUnavailable,
    JobNotFound,
    SubmitterState,
)
from workflows.decisions.rayjob.status import Transition, apply_transition, kube_time

__all__ = [
    "HEAD_POD_NOT_FOUND_MESSAGE",
    "JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE",
    "RunningDecision",
    "has_submitter",
    "next_running_status",
    "status_after_http_submission",
]

HEAD_POD_NOT_FOUND_MESSAGE = "Ray head pod not found."
JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE = "Submitter completed but Ray job not found in RayCluster."


@dataclass(frozen=True)
class RunningDecision:
    """The new status, and whether to submit the Ray job over HTTP now (HTTPMode, job not found)."""

    status: RayJobStatus
    submit_job: bool = False


def has_submitter(job: RayJob) -> bool:
    """Whether a submitter (K8sJobMode Job, SidecarMode container) runs the job and must finish first."""
    return job.spec.submission_mode in (JobSubmissionMode.K8S_JOB_MODE, JobSubmissionMode.SIDECAR_MODE)


def _submitter_transition(
    job: RayJob, submitter: SubmitterState, now: datetime, job_info: JobInfoResult
) -> Transition | None:
    # Terminal if this look or an earlier one saw it so (a Ray job never leaves a terminal state).
    looked = job_info.status if isinstance(job_info, JobInfo) else None
    seen = looked if looked is not None and is_job_terminal(looked) else job.status.job_status
    finished = submitter_finished_deadline(
        kube_time(submitter.finished_at) if submitter.finished_at else None, seen
    )
    # KubeRay checks the 30 s rule after judging the submitter, so it overrides a submitter failure.
    if finished is not None and now >= finished.at:
        return finished.transition
    if submitter.head_pod_missing:
        return Transition(JobDeploymentStatus.FAILED, JobFailedReason.APP_FAILED, HEAD_POD_NOT_FOUND_MESSAGE)
    if not submitter.failed:
        return None
    if job.status.job_status == JobStatus.FAILED:
        # The application failed; the message of the previous job status check stays.
        return Transition(JobDeploymentStatus.FAILED, JobFailedReason.APP_FAILED)
    return Transition(
        JobDeploymentStatus.FAILED, JobFailedReason.SUBMISSION_FAILED, submitter.failure_message
    )


def _record_check_failure(status: RayJobStatus, now: datetime) -> RayJobStatus:
    if status.job_status_check_failure_start_time is not None:
        return status
    return status.model_copy(update={"job_status_check_failure_start_time": kube_time(now)})


def _from_epoch_ms(value: int) -> datetime:
    return kube_time(datetime.fromtimestamp(value / 1000, tz=UTC))


def _status_from_job_info(
    job: RayJob, info: JobInfo, finished_at: datetime | None, cluster_status: RayClusterStatus
) -> RayJobStatus:
    terminal = is_job_terminal(info.status) and (not has_submitter(job) or finished_at is not None)
    deployment, reason = JobDeploymentStatus.RUNNING, None
    if terminal:
        deployment = JobDeploymentStatus.COMPLETE
        if info.status == JobStatus.FAILED:
            deployment, reason = JobDeploymentStatus.FAILED, JobFailedReason.APP_FAILED
    previous = job.status.ray_job_info
    ray_job_info = RayJobInfo(
        start_time=_from_epoch_ms(info.start_time_ms) if info.start_time_ms else previous.start_time,
        end_time=_from_epoch_ms(info.end_time_ms) if info.end_time_ms else previous.end_time,
    )
    return job.status.model_copy(
        update={
            "job_status_check_failure_start_time": None,
            "ray_cluster_status": cluster_status,
            "job_status": info.status,
            "job_deployment_status": deployment,
            "reason": reason,
            "message": info.message,
            "ray_job_info": ray_job_info,
        }
    )


def next_running_status(
    job: RayJob,
    now: datetime,
    *,
    cluster_status: RayClusterStatus,
    submitter: SubmitterState | None,
    job_info: JobInfoResult,
) -> RunningDecision:
    """The status after one look at a Running job (its state checks already passed).

    `submitter` is None in HTTPMode and InteractiveMode. The Ray job is Complete/Failed only once it is
    terminal and, when there is a submitter, the submitter finished too (KubeRay PR #1919).
    """
    status = job.status
    finished_at = submitter.finished_at if submitter is not None else None
    if submitter is not None and has_submitter(job):
        transition = _submitter_transition(job, submitter, now, job_info)
        if transition is not None:
            return RunningDecision(apply_transition(status, transition))
    if (
        isinstance(job_info, JobNotFound)
        and status.job_status is not None
        and is_job_terminal(status.job_status)
    ):
        # A Ray job never leaves a terminal state: "not found" after one was seen finished is a stale look or
        # a lost record, not a job that never ran; it finished as it was seen.
        job_info = JobInfo(status.job_status, status.message or "")
    if isinstance(job_info, JobNotFound):
        if job.spec.submission_mode == JobSubmissionMode.HTTP_MODE:
            return RunningDecision(status, submit_job=True)
        if finished_at is not None:
            failed = Transition(
                JobDeploymentStatus.FAILED, JobFailedReason.APP_FAILED, JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE
            )
            return RunningDecision(apply_transition(status, failed))
        return RunningDecision(status)
    if isinstance(job_info, JobInfoUnavailable):
        return RunningDecision(_record_check_failure(status, now))
    return RunningDecision(_status_from_job_info(job, job_info, finished_at, cluster_status))


def status_after_http_submission(status: RayJobStatus, now: datetime, *, submitted: bool) -> RayJobStatus:
    """HTTPMode resubmission after a 404: success clears the failing-checks clock, a failure starts it."""
    if submitted:
        return status.model_copy(update={"job_status_check_failure_start_time": None})
    return _record_check_failure(status, now)
