"""RayJob transitions: start of an attempt, suspend/resume, the state checks, cluster readiness, Waiting."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.operator import OperatorConfig
from models.raycluster import RayClusterStatus
from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJob
from models.validation.rayjob import validate_rayjob_status
from tests.workflows.decisions.rayjob.rayjobs import rayjob
from workflows.decisions.rayjob.status import Transition, apply_transition, kube_time
from workflows.decisions.rayjob.transitions import (
    adopt_interactive_job_id,
    is_cluster_ready,
    is_judged_on_job_state,
    resume_transition,
    should_stop_ray_job_on_delete,
    start_attempt,
    state_check_transition,
    suspend_transition,
    transition_when_cluster_ready,
    validation_failed_transition,
)

NOW = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
SUFFIX = r"[bcdfghjklmnpqrstvwxz2456789]{5}"


def make_job(spec: dict[str, Any] | None = None, **status: Any) -> RayJob:
    return rayjob(spec, status)


def test_start_attempt_generates_ids_and_starts_the_clock() -> None:
    status = start_attempt(make_job(), NOW, random.Random(7))
    assert status.job_deployment_status == JobDeploymentStatus.INITIALIZING
    assert status.job_status == JobStatus.NEW
    assert status.start_time == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)  # whole seconds, like metav1.Time
    assert re.fullmatch(f"rj-{SUFFIX}", status.job_id)
    assert re.fullmatch(f"rj-{SUFFIX}", status.ray_cluster_name)
    assert status.job_id != status.ray_cluster_name
    # The same random source gives the same ids: replay-safe.
    assert start_attempt(make_job(), NOW, random.Random(7)) == status


@pytest.mark.parametrize(
    ("spec", "status", "job_id", "cluster"),
    [
        ({"jobId": "my-id"}, {}, "my-id", None),
        ({"submissionMode": "InteractiveMode"}, {}, "", None),  # the user sets the id later
        ({"clusterSelector": {"ray.io/cluster": "shared"}}, {}, None, "shared"),
        ({"jobId": "my-id"}, {"jobId": "kept", "rayClusterName": "kept-c"}, "kept", "kept-c"),
    ],
)
def test_start_attempt_ids(
    spec: dict[str, Any], status: dict[str, Any], job_id: str | None, cluster: str | None
) -> None:
    started = start_attempt(make_job(spec, **status), NOW, random.Random(1))
    if job_id is not None:
        assert started.job_id == job_id
    if cluster is not None:
        assert started.ray_cluster_name == cluster


# updateStatusToSuspendingIfNeeded: (suspend, status) -> Suspending?
@pytest.mark.parametrize(
    ("suspend", "state", "suspends"),
    [
        (False, JobDeploymentStatus.INITIALIZING, False),
        (True, JobDeploymentStatus.COMPLETE, False),
        (True, JobDeploymentStatus.INITIALIZING, True),
        (True, JobDeploymentStatus.RUNNING, True),
        (True, JobDeploymentStatus.WAITING, False),
        (True, JobDeploymentStatus.NEW, False),
        (True, JobDeploymentStatus.RETRYING, False),
    ],
)
def test_suspend_is_honoured_only_from_initializing_and_running(
    suspend: bool, state: JobDeploymentStatus, suspends: bool
) -> None:
    job = make_job({"suspend": suspend, "shutdownAfterJobFinishes": True}, jobDeploymentStatus=state)
    transition = suspend_transition(job)
    assert (transition == Transition(JobDeploymentStatus.SUSPENDING)) == suspends
    assert (transition is None) != suspends


def test_state_check_order_suspend_first_then_deadlines() -> None:
    spec = {"suspend": True, "shutdownAfterJobFinishes": True, "activeDeadlineSeconds": 1}
    job = make_job(spec, jobDeploymentStatus="Initializing", startTime="2025-01-02T03:00:00Z")
    late = NOW + timedelta(hours=1)
    assert state_check_transition(job, late, OperatorConfig()) == Transition(JobDeploymentStatus.SUSPENDING)
    job.spec.suspend = False
    passed = state_check_transition(job, late, OperatorConfig())
    assert passed is not None
    assert passed.reason == JobFailedReason.DEADLINE_EXCEEDED
    job.spec.active_deadline_seconds = None
    assert state_check_transition(job, late, OperatorConfig()) is None


def test_waiting_ignores_suspend_and_active_deadline() -> None:
    spec = {"submissionMode": "InteractiveMode", "suspend": True, "activeDeadlineSeconds": 1}
    job = make_job(spec, jobDeploymentStatus="Waiting", startTime="2025-01-02T03:00:00Z")
    assert state_check_transition(job, NOW + timedelta(days=1), OperatorConfig()) is None


def test_running_state_check_includes_the_submitter_finished_rule() -> None:
    job = make_job(jobDeploymentStatus="Running", startTime="2025-01-02T03:00:00Z")
    finished = NOW - timedelta(seconds=31)
    passed = state_check_transition(job, NOW, OperatorConfig(), submitter_finished_at=finished)
    assert passed is not None
    assert passed.job_status == JobStatus.FAILED
    assert state_check_transition(job, NOW, OperatorConfig(), submitter_finished_at=NOW) is None


@pytest.mark.parametrize(
    ("spec", "submitter_finished_ago", "judged_on_job"),
    [
        ({}, 31, True),  # the submitter finished, the job is not terminal: look at the job first
        ({}, 29, False),  # nothing overdue
        ({}, None, False),  # no submitter finished
        ({"activeDeadlineSeconds": 60}, 31, False),  # checked first by KubeRay, holds whatever the job does
        ({"suspend": True}, 31, False),  # a suspend applies as it is
    ],
)
def test_a_fresh_look_precedes_only_the_deadline_judged_on_the_job_state(
    spec: dict[str, Any], submitter_finished_ago: int | None, judged_on_job: bool
) -> None:
    job = make_job(spec, jobDeploymentStatus="Running", startTime="2025-01-02T03:00:00Z")
    finished = NOW - timedelta(seconds=submitter_finished_ago) if submitter_finished_ago is not None else None
    judged = is_judged_on_job_state(job, NOW, OperatorConfig(), submitter_finished_at=finished)
    assert judged is judged_on_job


@pytest.mark.parametrize(
    ("cluster_status", "ready"),
    [
        (None, False),
        (RayClusterStatus(), False),
        (RayClusterStatus(state="suspended"), False),
        (RayClusterStatus(state="ready"), True),
    ],
)
def test_cluster_ready(cluster_status: RayClusterStatus | None, ready: bool) -> None:
    assert is_cluster_ready(cluster_status) == ready


@pytest.mark.parametrize(
    ("mode", "state"),
    [
        ("K8sJobMode", JobDeploymentStatus.RUNNING),
        ("HTTPMode", JobDeploymentStatus.RUNNING),
        ("SidecarMode", JobDeploymentStatus.RUNNING),
        ("InteractiveMode", JobDeploymentStatus.WAITING),
    ],
)
def test_transition_when_cluster_ready(mode: str, state: JobDeploymentStatus) -> None:
    assert transition_when_cluster_ready(make_job({"submissionMode": mode})).deployment_status == state


def test_interactive_mode_adopts_the_job_id_once_set() -> None:
    waiting = make_job({"submissionMode": "InteractiveMode"}, jobDeploymentStatus="Waiting")
    assert adopt_interactive_job_id(waiting) is None
    waiting.spec.job_id = "raysubmit_123"
    adopted = adopt_interactive_job_id(waiting)
    assert adopted is not None
    assert adopted.job_id == "raysubmit_123"
    assert adopted.job_deployment_status == JobDeploymentStatus.RUNNING
    running = make_job({"jobId": "x"}, jobDeploymentStatus="Running")
    assert adopt_interactive_job_id(running) is None


@pytest.mark.parametrize(
    ("suspend", "state", "resumes"),
    [(False, "Suspended", True), (True, "Suspended", False), (False, "Suspending", False)],
)
def test_resume(suspend: bool, state: str, resumes: bool) -> None:
    job = make_job({"suspend": suspend}, jobDeploymentStatus=state)
    transition = resume_transition(job)
    if not resumes:
        assert transition is None
        return
    assert transition is not None
    resumed = apply_transition(job.status, transition)
    assert resumed.job_deployment_status == JobDeploymentStatus.NEW
    assert resumed.job_status == JobStatus.NEW


def test_validation_failed_is_recorded_with_its_message() -> None:
    status = apply_transition(
        make_job().status, validation_failed_transition("The RayJob spec is invalid: x")
    )
    assert status.job_deployment_status == JobDeploymentStatus.VALIDATION_FAILED
    assert status.reason == JobFailedReason.VALIDATION_FAILED
    assert status.message == "The RayJob spec is invalid: x"


def test_apply_transition_keeps_what_it_does_not_set() -> None:
    status = make_job(message="m", reason="AppFailed", jobStatus="RUNNING").status
    moved = apply_transition(status, Transition(JobDeploymentStatus.SUSPENDING))
    assert (moved.message, moved.reason, moved.job_status) == (
        "m",
        JobFailedReason.APP_FAILED,
        JobStatus.RUNNING,
    )
    assert kube_time(datetime(2025, 1, 1, 0, 0, 0, 999999)) == datetime(2025, 1, 1, tzinfo=UTC)


def test_waiting_outside_interactive_mode_fails_validation() -> None:
    # An `apply` that changes submissionMode while Waiting: KubeRay's ValidateRayJobStatus, then a dead end.
    job = make_job({"submissionMode": "HTTPMode"}, jobDeploymentStatus="Waiting")
    message = validate_rayjob_status(job)
    assert message is not None
    status = apply_transition(job.status, validation_failed_transition(message))
    assert status.job_deployment_status == JobDeploymentStatus.VALIDATION_FAILED
    assert status.message.startswith("The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting`")
    assert (
        validate_rayjob_status(make_job({"submissionMode": "InteractiveMode"}, jobDeploymentStatus="Waiting"))
        is None
    )


@pytest.mark.parametrize(
    ("job_status", "stops"),
    [
        ("", True),
        ("PENDING", True),
        ("RUNNING", True),
        ("SUCCEEDED", False),
        ("FAILED", False),
        ("STOPPED", False),
    ],
)
def test_delete_stops_a_ray_job_that_may_still_run(job_status: str, stops: bool) -> None:
    assert should_stop_ray_job_on_delete(make_job(jobStatus=job_status).status) == stops
