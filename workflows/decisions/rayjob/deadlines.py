"""RayJob deadlines as absolute times, each with the transition KubeRay makes when it passes.

KubeRay functions: `checkActiveDeadlineAndUpdateStatusIfNeeded`,
`checkPreRunningDeadlineAndUpdateStatusIfNeeded`, `checkTransitionGracePeriodAndUpdateStatusIfNeeded`,
`checkJobStatusCheckTimeoutAndUpdateStatusIfNeeded`, `checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded`
(rayjob_controller.go).

Where raypilot differs: KubeRay re-evaluates these on every reconcile (every ~3 s) and so fires up to a few
seconds late; raypilot computes the instant and the workflow arms one durable timer for the earliest deadline,
so a deadline fires exactly at its time. A deadline is reached when `now >= at`, as in KubeRay
(`time.Now().Before(deadline)` is false).

Which deadlines apply where (KubeRay's order of checks, which decides the winner when several have passed):
- Initializing: activeDeadlineSeconds, preRunningDeadlineSeconds.
- Waiting: preRunningDeadlineSeconds only (KubeRay ignores activeDeadlineSeconds and suspend there).
- Running: activeDeadlineSeconds, the transition grace period, the job-status-check timeout, then
(K8sJobMode and
  SidecarMode, once the submitter finished) the submitter-finished timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from models.naming import SUBMITTER_FINISHED_TIMEOUT_SECONDS
from models.operator import OperatorConfig
from models.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    RayJob,
    is_job_terminal,
)
from workflows.decisions.rayjob.goformat import go_date_time, go_duration, go_time_string
from workflows.decisions.rayjob.status import Transition, kube_time

__all__ = [
    "GRACE_PERIOD_MESSAGE",
    "OBSERVER_CHECK_INTERVAL",
    "SUBMITTER_FINISHED_DEADLINE",
    "Deadline",
    "Wake",
    "active_deadline",
    "earliest_deadline",
    "earliest_wake",
    "job_status_check_deadline",
    "overdue_deadline",
    "pre_running_deadline",
    "rayjob_deadlines",
    "submitter_finished_deadline",
    "transition_grace_deadline",
]

GRACE_PERIOD_MESSAGE = (
    "JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus "
    "reaches a terminal state."
)


SUBMITTER_FINISHED_DEADLINE: Final = "submitterFinishedTimeout"


@dataclass(frozen=True)
class Deadline:
    """At `at` (inclusive), `transition` applies unless the state changed before."""

    name: str
    at: datetime
    transition: Transition


def active_deadline(job: RayJob) -> Deadline | None:
    """activeDeadlineSeconds, counted from this attempt's startTime."""
    return _from_start_time(
        job, job.spec.active_deadline_seconds, "activeDeadlineSeconds", JobFailedReason.DEADLINE_EXCEEDED
    )


def pre_running_deadline(job: RayJob) -> Deadline | None:
    """preRunningDeadlineSeconds: the time allowed to reach Running, counted from startTime."""
    return _from_start_time(
        job,
        job.spec.pre_running_deadline_seconds,
        "preRunningDeadlineSeconds",
        JobFailedReason.PRE_RUNNING_DEADLINE_EXCEEDED,
    )


def _from_start_time(
    job: RayJob, seconds: int | None, field: str, reason: JobFailedReason
) -> Deadline | None:
    """A deadline of `seconds` after this attempt's startTime (none until both are known), failing the job
    with KubeRay's message for `field`."""
    start = job.status.start_time
    if seconds is None or start is None:
        return None
    message = (
        f"The RayJob has passed the {field}. StartTime: {go_time_string(start)}. "
        f"{field[0].upper()}{field[1:]}: {seconds}"
    )
    failed = Transition(JobDeploymentStatus.FAILED, reason, message)
    return Deadline(field, start + timedelta(seconds=seconds), failed)


def transition_grace_deadline(job: RayJob, grace_seconds: int) -> Deadline | None:
    """The Ray job is terminal but the deployment is still Running: give up `grace_seconds` after its end.

    `grace_seconds` is RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS as KubeRay parses it (Atoi,
    default 300, negative values kept).
    """
    status = job.status
    end = status.ray_job_info.end_time
    if status.job_deployment_status != JobDeploymentStatus.RUNNING or not is_job_terminal(status.job_status):
        return None
    if end is None:
        return None
    deployment = (
        JobDeploymentStatus.FAILED if status.job_status == JobStatus.FAILED else JobDeploymentStatus.COMPLETE
    )
    transition = Transition(
        deployment, JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED, GRACE_PERIOD_MESSAGE
    )
    return Deadline("transitionGracePeriod", end + timedelta(seconds=grace_seconds), transition)


def job_status_check_deadline(job: RayJob, timeout_seconds: int) -> Deadline | None:
    """Job status checks failing since jobStatusCheckFailureStartTime: fail after `timeout_seconds`.

    `timeout_seconds` is RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS as KubeRay parses it (invalid or <= 0 -> 300).
    """
    since = job.status.job_status_check_failure_start_time
    if since is None:
        return None
    message = (
        f"Job status checks have been failing since {go_date_time(since)}; "
        f"exceeded timeout of {timeout_seconds}s"
    )
    failed = Transition(
        JobDeploymentStatus.FAILED, JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED, message
    )
    return Deadline("jobStatusCheckTimeout", since + timedelta(seconds=timeout_seconds), failed)


def submitter_finished_deadline(
    finished_at: datetime | None, job_status: JobStatus | None
) -> Deadline | None:
    """The submitter finished but the Ray job is not terminal: fail 30 s later, marking the Ray job FAILED.

    None once the Ray job was seen terminal: the rule is about a job that never got there, and a workflow
    that looks late (a worker busy for minutes) must not fail a job that succeeded in time."""
    if finished_at is None or (job_status is not None and is_job_terminal(job_status)):
        return None
    timeout = SUBMITTER_FINISHED_TIMEOUT_SECONDS
    message = (
        f"The RayJob submitter finished at {go_date_time(finished_at)} but the ray job did not reach "
        f"terminal state within {go_duration(timeout)}"
    )
    failed = Transition(
        JobDeploymentStatus.FAILED,
        JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED,
        message,
        job_status=JobStatus.FAILED,
    )
    return Deadline(SUBMITTER_FINISHED_DEADLINE, finished_at + timedelta(seconds=timeout), failed)


def rayjob_deadlines(
    job: RayJob, config: OperatorConfig, submitter_finished_at: datetime | None = None
) -> list[Deadline]:
    """The deadlines that apply in the job's current deployment status, in KubeRay's order of checks.

    `submitter_finished_at` is when the submitter (K8sJobMode Job or SidecarMode container) finished, if it
    has; it only matters in Running.
    """
    state = job.status.job_deployment_status
    if state == JobDeploymentStatus.INITIALIZING:
        candidates = [active_deadline(job), pre_running_deadline(job)]
    elif state == JobDeploymentStatus.WAITING:
        candidates = [pre_running_deadline(job)]
    elif state == JobDeploymentStatus.RUNNING:
        candidates = [
            active_deadline(job),
            transition_grace_deadline(job, config.job_transition_grace_seconds),
            job_status_check_deadline(job, config.job_status_check_timeout_seconds),
            submitter_finished_deadline(
                kube_time(submitter_finished_at) if submitter_finished_at else None, job.status.job_status
            ),
        ]
    else:
        candidates = []
    return [deadline for deadline in candidates if deadline is not None]


def earliest_deadline(deadlines: Sequence[Deadline]) -> Deadline | None:
    """The deadline to arm a timer for: the earliest; on a tie, the one KubeRay checks first."""
    return min(deadlines, key=lambda deadline: deadline.at, default=None)


# How often a RayJob waiting on the cluster observer checks on it (registers again, reads its job once):
# the safety net for a lost observer, at ~7 history events an hour of a running job.
OBSERVER_CHECK_INTERVAL: Final = timedelta(hours=1)
OBSERVER_CHECK: Final = "observer check"


@dataclass(frozen=True)
class Wake:
    """When a waiting RayJob's one timer fires, and why (its summary)."""

    name: str
    at: datetime


def earliest_wake(deadline: Deadline | None, observer_check_at: datetime | None) -> Wake | None:
    """The one timer of a running RayJob: its earliest deadline, or the observer check if that is earlier
    (a tie goes to the deadline)."""
    wakes = [Wake(deadline.name, deadline.at)] if deadline is not None else []
    if observer_check_at is not None:
        wakes.append(Wake(OBSERVER_CHECK, observer_check_at))
    return min(wakes, key=lambda wake: wake.at, default=None)


def overdue_deadline(deadlines: Sequence[Deadline], now: datetime) -> Deadline | None:
    """The deadline whose transition applies at `now`: the first passed one in KubeRay's order of checks.

    After downtime several may have passed; KubeRay applies the first one it checks, not the earliest.
    """
    return next((deadline for deadline in deadlines if now >= deadline.at), None)
