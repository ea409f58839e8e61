"""KubeRay's RayJob envtest and e2e cases replayed as sequences of raypilot decisions, composed the way the
workflow composes them (observe -> decide -> settle)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from models.raycluster import RayClusterStatus
from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJob, RayJobStatus
from tests.workflows.decisions.rayjob.rayjobs import CONFIG, rayjob
from workflows.decisions.rayjob.observations import JobInfo, SubmitterState
from workflows.decisions.rayjob.retry import settle_transition, status_after_resources_released
from workflows.decisions.rayjob.running import next_running_status
from workflows.decisions.rayjob.status import Transition, apply_transition
from workflows.decisions.rayjob.transitions import (
    adopt_interactive_job_id,
    is_cluster_ready,
    resume_transition,
    start_attempt,
    state_check_transition,
    transition_when_cluster_ready,
)

T0 = datetime(2025, 7, 1, 8, 0, 0, tzinfo=UTC)
READY = RayClusterStatus(state="ready")


def new_job(**spec: Any) -> RayJob:
    return rayjob({"entrypoint": "python x.py", **spec})


def settled(job: RayJob, status: RayJobStatus, now: datetime) -> RayJob:
    return job.model_copy(update={"status": settle_transition(job.spec, job.status, status, now)})


def apply(job: RayJob, transition: Transition, now: datetime) -> RayJob:
    return settled(job, apply_transition(job.status, transition), now)


def run_attempt_to_running(job: RayJob, now: datetime, rand: random.Random) -> RayJob:
    job = settled(job, start_attempt(job, now, rand), now)
    assert job.status.job_deployment_status == JobDeploymentStatus.INITIALIZING
    assert is_cluster_ready(READY)
    job = apply(job, transition_when_cluster_ready(job), now)
    assert job.status.job_deployment_status == JobDeploymentStatus.RUNNING
    return job


def finish_attempt(job: RayJob, now: datetime, info: JobInfo) -> RayJob:
    submitter = SubmitterState(finished_at=now)
    decision = next_running_status(job, now, cluster_status=READY, submitter=submitter, job_info=info)
    return settled(job, decision.status, now)


def test_active_deadline_fails_from_initializing_and_is_never_retried() -> None:
    job = new_job(activeDeadlineSeconds=3, backoffLimit=2)
    job = settled(job, start_attempt(job, T0, random.Random(1)), T0)
    # The cluster never becomes ready; nothing happens before the deadline, exactly at it the job fails.
    assert state_check_transition(job, T0 + timedelta(seconds=2, microseconds=999999), CONFIG) is None
    passed = state_check_transition(job, T0 + timedelta(seconds=3), CONFIG)
    assert passed is not None
    job = apply(job, passed, T0 + timedelta(seconds=3))
    assert job.status.job_deployment_status == JobDeploymentStatus.FAILED
    assert job.status.reason == JobFailedReason.DEADLINE_EXCEEDED
    assert (job.status.failed, job.status.succeeded) == (1, 0)
    assert job.status.end_time == T0 + timedelta(seconds=3)


def test_backoff_limit_1_retries_with_a_new_cluster_then_succeeds() -> None:
    rand = random.Random(42)
    job = run_attempt_to_running(new_job(backoffLimit=1), T0, rand)
    first_cluster, first_job_id = job.status.ray_cluster_name, job.status.job_id
    failed_at = T0 + timedelta(minutes=1)
    job = finish_attempt(job, failed_at, JobInfo(JobStatus.FAILED, "exit 1", 1, 2))
    assert job.status.job_deployment_status == JobDeploymentStatus.RETRYING
    assert job.status.end_time is None
    # Old cluster and submitter deleted (activities), then Retrying -> New.
    job = job.model_copy(update={"status": status_after_resources_released(job.status)})
    assert job.status.job_deployment_status == JobDeploymentStatus.NEW
    second_start = T0 + timedelta(minutes=2)
    job = run_attempt_to_running(job, second_start, rand)
    assert job.status.ray_cluster_name not in ("", first_cluster)
    assert job.status.job_id not in ("", first_job_id)
    assert job.status.start_time == second_start  # deadlines are per attempt
    job = finish_attempt(job, T0 + timedelta(minutes=3), JobInfo(JobStatus.SUCCEEDED, "ok", 1, 2))
    assert job.status.job_deployment_status == JobDeploymentStatus.COMPLETE
    assert (job.status.succeeded, job.status.failed) == (1, 1)
    assert job.status.end_time == T0 + timedelta(minutes=3)


def test_backoff_limit_2_app_failures_end_failed_after_three_attempts() -> None:
    rand = random.Random(3)
    job = new_job(backoffLimit=2, submitterConfig={"backoffLimit": 1})
    for attempt in range(3):
        now = T0 + timedelta(minutes=attempt)
        job = run_attempt_to_running(job, now, rand)
        job = finish_attempt(job, now, JobInfo(JobStatus.FAILED, "JOB_ENTRYPOINT_COMMAND_ERROR", 1, 2))
        if job.status.job_deployment_status == JobDeploymentStatus.RETRYING:
            job = job.model_copy(update={"status": status_after_resources_released(job.status)})
    assert job.status.job_deployment_status == JobDeploymentStatus.FAILED
    assert job.status.reason == JobFailedReason.APP_FAILED
    assert (job.status.failed, job.status.succeeded) == (3, 0)


def test_interactive_mode_waits_for_a_job_id() -> None:
    job = new_job(submissionMode="InteractiveMode")
    job = settled(job, start_attempt(job, T0, random.Random(5)), T0)
    assert job.status.job_id == ""
    job = apply(job, transition_when_cluster_ready(job), T0)
    assert job.status.job_deployment_status == JobDeploymentStatus.WAITING
    assert adopt_interactive_job_id(job) is None
    job.spec.job_id = "raysubmit_abc"  # the user's `apply`
    adopted = adopt_interactive_job_id(job)
    assert adopted is not None
    job = settled(job, adopted, T0)
    assert (job.status.job_deployment_status, job.status.job_id) == (
        JobDeploymentStatus.RUNNING,
        "raysubmit_abc",
    )


def test_created_suspended_never_gets_a_cluster_and_resumes_on_demand() -> None:
    job = new_job(suspend=True, shutdownAfterJobFinishes=True)
    job = settled(job, start_attempt(job, T0, random.Random(9)), T0)
    suspending = state_check_transition(job, T0, CONFIG)
    assert suspending == Transition(JobDeploymentStatus.SUSPENDING)
    job = apply(job, suspending, T0)
    # Nothing to delete: the cluster was never created. The status forgets the attempt's names.
    job = job.model_copy(update={"status": status_after_resources_released(job.status)})
    assert job.status.job_deployment_status == JobDeploymentStatus.SUSPENDED
    assert job.status.ray_cluster_name == ""
    assert resume_transition(job) is None
    job.spec.suspend = False
    resumed = resume_transition(job)
    assert resumed is not None
    job = apply(job, resumed, T0)
    assert job.status.job_deployment_status == JobDeploymentStatus.NEW
    assert (job.status.failed, job.status.succeeded) == (0, 0)


def test_suspend_is_atomic_once_suspending() -> None:
    job = run_attempt_to_running(new_job(suspend=True, shutdownAfterJobFinishes=True), T0, random.Random(2))
    job = apply(job, Transition(JobDeploymentStatus.SUSPENDING), T0)
    job.spec.suspend = False  # flipped back while a finalizer still holds the cluster
    assert state_check_transition(job, T0, CONFIG) is None  # Suspending is not re-evaluated
    job = job.model_copy(update={"status": status_after_resources_released(job.status)})
    assert job.status.job_deployment_status == JobDeploymentStatus.SUSPENDED
