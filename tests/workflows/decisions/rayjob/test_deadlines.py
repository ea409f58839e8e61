"""RayJob deadlines: instants, KubeRay's reasons and messages, which apply in which state, and which one
wins."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.operator import operator_config_from_env
from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJob
from tests.workflows.decisions.rayjob.rayjobs import CONFIG, rayjob
from workflows.decisions.rayjob.deadlines import (
    GRACE_PERIOD_MESSAGE,
    OBSERVER_CHECK,
    Deadline,
    Wake,
    active_deadline,
    earliest_deadline,
    earliest_wake,
    job_status_check_deadline,
    overdue_deadline,
    pre_running_deadline,
    rayjob_deadlines,
    submitter_finished_deadline,
    transition_grace_deadline,
)
from workflows.decisions.rayjob.status import Transition

START = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)


def make_job(spec: dict[str, Any] | None = None, **status: Any) -> RayJob:
    return rayjob(spec, {"startTime": "2025-03-04T05:06:07Z", **status})


def test_active_deadline_counts_from_start_time() -> None:
    deadline = active_deadline(make_job({"activeDeadlineSeconds": 3}))
    assert deadline is not None
    assert deadline.at == START + timedelta(seconds=3)
    assert deadline.transition.deployment_status == JobDeploymentStatus.FAILED
    assert deadline.transition.reason == JobFailedReason.DEADLINE_EXCEEDED
    assert deadline.transition.message == (
        "The RayJob has passed the activeDeadlineSeconds. StartTime: 2025-03-04 05:06:07 +0000 UTC. "
        "ActiveDeadlineSeconds: 3"
    )


def test_pre_running_deadline() -> None:
    deadline = pre_running_deadline(make_job({"preRunningDeadlineSeconds": 60}))
    assert deadline is not None
    assert deadline.at == START + timedelta(seconds=60)
    assert deadline.transition.reason == JobFailedReason.PRE_RUNNING_DEADLINE_EXCEEDED
    assert deadline.transition.message == (
        "The RayJob has passed the preRunningDeadlineSeconds. StartTime: 2025-03-04 05:06:07 +0000 UTC. "
        "PreRunningDeadlineSeconds: 60"
    )


def test_no_deadline_without_setting_or_start_time() -> None:
    assert active_deadline(make_job()) is None
    assert pre_running_deadline(make_job()) is None
    assert active_deadline(make_job({"activeDeadlineSeconds": 3}, startTime=None)) is None


@pytest.mark.parametrize(
    ("job_status", "deployment", "expected"),
    [
        (JobStatus.SUCCEEDED, JobDeploymentStatus.RUNNING, JobDeploymentStatus.COMPLETE),
        (JobStatus.STOPPED, JobDeploymentStatus.RUNNING, JobDeploymentStatus.COMPLETE),
        (JobStatus.FAILED, JobDeploymentStatus.RUNNING, JobDeploymentStatus.FAILED),
        (JobStatus.RUNNING, JobDeploymentStatus.RUNNING, None),  # Ray job not terminal
        (JobStatus.SUCCEEDED, JobDeploymentStatus.COMPLETE, None),  # deployment already moved on
    ],
)
def test_transition_grace_period(
    job_status: JobStatus, deployment: JobDeploymentStatus, expected: JobDeploymentStatus | None
) -> None:
    job = make_job(
        jobStatus=job_status, jobDeploymentStatus=deployment, rayJobInfo={"endTime": "2025-03-04T06:00:00Z"}
    )
    deadline = transition_grace_deadline(job, 300)
    if expected is None:
        assert deadline is None
        return
    assert deadline is not None
    assert deadline.at == datetime(2025, 3, 4, 6, 5, tzinfo=UTC)
    assert deadline.transition.deployment_status == expected
    assert deadline.transition.reason == JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED
    assert deadline.transition.message == GRACE_PERIOD_MESSAGE


def test_transition_grace_needs_the_ray_job_end_time() -> None:
    job = make_job(jobStatus=JobStatus.SUCCEEDED, jobDeploymentStatus=JobDeploymentStatus.RUNNING)
    assert transition_grace_deadline(job, 300) is None


# checkJobStatusCheckTimeout: nil -> no; just started -> not yet; timeout 1 s, started 2 s ago -> Failed.
@pytest.mark.parametrize(
    ("failing_since", "timeout", "now_offset", "fires"),
    [(None, 300, 0, False), ("2025-03-04T05:06:07Z", 300, 0, False), ("2025-03-04T05:06:07Z", 1, 2, True)],
)
def test_job_status_check_timeout(
    failing_since: str | None, timeout: int, now_offset: int, fires: bool
) -> None:
    job = make_job(jobStatusCheckFailureStartTime=failing_since)
    passed = overdue_deadline(
        [d for d in [job_status_check_deadline(job, timeout)] if d], START + timedelta(seconds=now_offset)
    )
    assert (passed is not None) == fires
    if passed is not None:
        assert passed.transition.deployment_status == JobDeploymentStatus.FAILED
        assert passed.transition.reason == JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED
        assert passed.transition.message == (
            "Job status checks have been failing since 2025-03-04 05:06:07; exceeded timeout of 1s"
        )
        assert "exceeded timeout of 1s" in passed.transition.message


# getJobStatusCheckTimeoutSeconds ("120" -> 120, "invalid" -> 300, unset -> 300, <= 0 -> 300) and the grace
# period (Atoi; invalid -> 300; negative kept), as the worker parses the environment for these decisions.
@pytest.mark.parametrize(
    ("env", "status_check", "grace"),
    [
        ({"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "120"}, 120, 300),
        ({"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "invalid"}, 300, 300),
        ({}, 300, 300),
        ({"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "0"}, 300, 300),
        ({"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "-5"}, 300, 300),
        ({"RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS": "60"}, 300, 60),
        ({"RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS": "-1"}, 300, -1),
        ({"RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS": "x"}, 300, 300),
    ],
)
def test_timeouts_from_environment(env: dict[str, str], status_check: int, grace: int) -> None:
    config = operator_config_from_env(env)
    assert config.job_status_check_timeout_seconds == status_check
    assert config.job_transition_grace_seconds == grace


def test_submitter_finished_timeout_marks_the_ray_job_failed() -> None:
    deadline = submitter_finished_deadline(datetime(2025, 3, 4, 7, 0, 0, tzinfo=UTC), JobStatus.RUNNING)
    assert deadline is not None
    assert deadline.at == datetime(2025, 3, 4, 7, 0, 30, tzinfo=UTC)
    assert deadline.transition.job_status == JobStatus.FAILED
    assert deadline.transition.deployment_status == JobDeploymentStatus.FAILED
    assert deadline.transition.reason == JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED
    assert deadline.transition.message == (
        "The RayJob submitter finished at 2025-03-04 07:00:00 but the ray job did not reach terminal state "
        "within 30s"
    )
    assert submitter_finished_deadline(None, JobStatus.RUNNING) is None


@pytest.mark.parametrize(
    ("job_status", "applies"),
    [
        (None, True),
        (JobStatus.PENDING, True),
        (JobStatus.RUNNING, True),
        (JobStatus.SUCCEEDED, False),
        (JobStatus.FAILED, False),
        (JobStatus.STOPPED, False),
    ],
)
def test_submitter_finished_timeout_only_for_a_ray_job_not_seen_terminal(
    job_status: JobStatus | None, applies: bool
) -> None:
    """A workflow that looks late (its worker busy for minutes) must not fail a job seen terminal in time."""
    deadline = submitter_finished_deadline(datetime(2025, 3, 4, 7, 0, 0, tzinfo=UTC), job_status)
    assert (deadline is not None) == applies


ALL_DEADLINES = {"activeDeadlineSeconds": 100, "preRunningDeadlineSeconds": 50}
RUNNING_EXTRAS = {
    "jobStatus": JobStatus.SUCCEEDED,
    "rayJobInfo": {"endTime": "2025-03-04T05:06:17Z"},
    "jobStatusCheckFailureStartTime": "2025-03-04T05:06:27Z",
}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (JobDeploymentStatus.INITIALIZING, ["activeDeadlineSeconds", "preRunningDeadlineSeconds"]),
        # KubeRay's Waiting branch checks only the pre-running deadline.
        (JobDeploymentStatus.WAITING, ["preRunningDeadlineSeconds"]),
        (
            JobDeploymentStatus.RUNNING,
            [
                "activeDeadlineSeconds",
                "transitionGracePeriod",
                "jobStatusCheckTimeout",
                # Not submitterFinishedTimeout: the Ray job is SUCCEEDED here (the grace period needs a
                # terminal job), and that rule is for a job never seen terminal.
            ],
        ),
        (JobDeploymentStatus.SUSPENDED, []),
        (JobDeploymentStatus.COMPLETE, []),
        (JobDeploymentStatus.NEW, []),
    ],
)
def test_deadlines_that_apply_per_state(state: JobDeploymentStatus, expected: list[str]) -> None:
    job = make_job(ALL_DEADLINES, jobDeploymentStatus=state, **RUNNING_EXTRAS)
    finished = START + timedelta(seconds=1)
    assert [d.name for d in rayjob_deadlines(job, CONFIG, finished)] == expected


def test_earliest_is_armed_but_kuberays_order_decides_after_downtime() -> None:
    # The Ray job still RUNNING, so the submitter rule applies (and the grace period does not).
    extras = {**RUNNING_EXTRAS, "jobStatus": JobStatus.RUNNING}
    job = make_job(ALL_DEADLINES, jobDeploymentStatus=JobDeploymentStatus.RUNNING, **extras)
    deadlines = rayjob_deadlines(job, CONFIG, START + timedelta(seconds=1))
    earliest = earliest_deadline(deadlines)
    assert earliest is not None
    assert earliest.name == "submitterFinishedTimeout"
    assert earliest.at == START + timedelta(seconds=31)
    assert overdue_deadline(deadlines, START + timedelta(seconds=30)) is None
    assert overdue_deadline(deadlines, START + timedelta(seconds=31)) == earliest  # exactly at: fires
    # Past every deadline, the first KubeRay checks (activeDeadlineSeconds) wins, not the earliest.
    late = overdue_deadline(deadlines, START + timedelta(days=1))
    assert late is not None
    assert late.name == "activeDeadlineSeconds"


def test_earliest_deadline_ties_go_to_the_first_checked() -> None:
    job = make_job(
        {"activeDeadlineSeconds": 50, "preRunningDeadlineSeconds": 50},
        jobDeploymentStatus=JobDeploymentStatus.INITIALIZING,
    )
    earliest = earliest_deadline(rayjob_deadlines(job, CONFIG))
    assert earliest is not None
    assert earliest.name == "activeDeadlineSeconds"
    assert earliest_deadline([]) is None


def _deadline(at: datetime) -> Deadline:
    return Deadline("activeDeadlineSeconds", at, Transition(JobDeploymentStatus.FAILED))


@pytest.mark.parametrize(
    ("deadline_in", "check_in", "expected"),
    [
        (None, None, None),  # the polling wait, no deadline: no timer at all
        (60, None, ("activeDeadlineSeconds", 60)),  # the polling wait: the deadline, as before
        (None, 3600, (OBSERVER_CHECK, 3600)),  # the observer, no deadline: the hourly check
        (60, 3600, ("activeDeadlineSeconds", 60)),
        (7200, 3600, (OBSERVER_CHECK, 3600)),
        (3600, 3600, ("activeDeadlineSeconds", 3600)),  # a tie: the deadline decides
    ],
)
def test_a_running_rayjobs_one_timer_is_its_earliest_deadline_or_observer_check(
    deadline_in: int | None, check_in: int | None, expected: tuple[str, int] | None
) -> None:
    deadline = _deadline(START + timedelta(seconds=deadline_in)) if deadline_in is not None else None
    check_at = START + timedelta(seconds=check_in) if check_in is not None else None
    wake = earliest_wake(deadline, check_at)
    assert wake == (Wake(expected[0], START + timedelta(seconds=expected[1])) if expected else None)
