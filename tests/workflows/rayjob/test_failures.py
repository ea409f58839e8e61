"""RayJobWorkflow failure paths: application failures, retries and counters, every deadline with KubeRay's
reason and message, submitter failures and failing status checks (time-skipping, fake activities)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from models.operator import OperatorConfig
from raypilot.testing.rayjob_scenarios import rayjob_manifest
from raypilot.testing.rayjob_world import FAILS, RUNS_FOREVER, SUCCEEDS, FakeWorld
from tests.workflows.rayjob.rayjob_support import FakeWorker, completed_run
from wire import names
from workflows.decisions.rayjob.deadlines import GRACE_PERIOD_MESSAGE


async def _run(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: FakeWorld, manifest: dict[str, Any]
) -> dict[str, Any]:
    _, result = await completed_run(env, fake_worker, world, manifest)
    return result


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _elapsed(result: dict[str, Any], since: str = "startTime") -> timedelta:
    return _time(result["endTime"]) - _time(result[since])


# A deadline's timer fires exactly on time; the pass it wakes first takes a fresh look at the Ray job (a job
# that ended in time must not fail) and stamps endTime (whole seconds) after that look. The look's run time
# moves the test server's clock too: on a loaded machine it has crossed a second boundary.
FRESH_LOOK = timedelta(seconds=2)


def _on_time(elapsed: timedelta, seconds: int) -> bool:
    return timedelta(seconds=seconds) <= elapsed <= timedelta(seconds=seconds) + FRESH_LOOK


async def test_a_failed_ray_job_fails_the_rayjob(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS])
    result = await _run(time_skipping_env, fake_worker, world, rayjob_manifest())
    assert (result["jobDeploymentStatus"], result["reason"], result["jobStatus"]) == (
        "Failed",
        "AppFailed",
        "FAILED",
    )
    assert (result["succeeded"], result["failed"]) == (0, 1)
    assert result["message"] == "Job is failed"


async def test_retries_end_with_one_success_after_one_failure(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS, SUCCEEDS])
    manifest = rayjob_manifest(mode="K8sJobMode", backoffLimit=1)
    result = await _run(time_skipping_env, fake_worker, world, manifest)

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert (result["succeeded"], result["failed"]) == (1, 1)
    first, second = world.called(names.CREATE_RAYCLUSTER)
    first_name, second_name = first.body["metadata"]["name"], second.body["metadata"]["name"]
    assert first_name != second_name
    assert result["rayClusterName"] == second_name
    # The failed attempt's cluster and submitter were released before the new attempt.
    assert first_name not in world.clusters
    assert [request.name for request in world.called(names.DELETE_JOB)] == ["sample"]
    assert len(world.ray_jobs) == 2
    assert result["jobId"] in world.ray_jobs
    assert world.event_reasons() == [
        "CreatedRayCluster",
        "CreatedRayJobSubmitter",
        "CreatedService",
        "DeletedRayCluster",
        "DeletedRayJobSubmitter",
        "CreatedRayCluster",
        "CreatedRayJobSubmitter",
        "CreatedService",
    ]


async def test_retries_stop_at_backoff_limit_plus_one_attempts(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS])
    result = await _run(time_skipping_env, fake_worker, world, rayjob_manifest(backoffLimit=2))
    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "AppFailed")
    assert (result["succeeded"], result["failed"]) == (0, 3)
    assert len(world.called(names.CREATE_RAYCLUSTER)) == 3


@pytest.mark.parametrize(
    ("field", "seconds", "backoff_limit", "reason", "attempts"),
    [
        # activeDeadlineSeconds ends the RayJob: no retry although the backoffLimit allows two.
        ("activeDeadlineSeconds", 3, 2, "DeadlineExceeded", 1),
        # preRunningDeadlineSeconds fails one attempt: the next one gets a deadline of its own.
        ("preRunningDeadlineSeconds", 60, 1, "PreRunningDeadlineExceeded", 2),
    ],
)
async def test_a_deadline_passed_while_initializing_fails_the_attempt(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    field: str,
    seconds: int,
    backoff_limit: int,
    reason: str,
    attempts: int,
) -> None:
    world = FakeWorld(clusters_become_ready=False)
    deadline: dict[str, Any] = {field: seconds}
    manifest = rayjob_manifest(**deadline, backoffLimit=backoff_limit)
    result = await _run(time_skipping_env, fake_worker, world, manifest)

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", reason)
    start_time = _time(result["startTime"]).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")
    capitalized = field[0].upper() + field[1:]
    assert result["message"] == (
        f"The RayJob has passed the {field}. StartTime: {start_time}. {capitalized}: {seconds}"
    )
    assert _on_time(_elapsed(result), seconds), _elapsed(result)
    assert result["failed"] == attempts
    assert len(world.called(names.CREATE_RAYCLUSTER)) == attempts


async def test_active_deadline_while_running(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[RUNS_FOREVER])
    result = await _run(time_skipping_env, fake_worker, world, rayjob_manifest(activeDeadlineSeconds=600))
    assert (result["jobDeploymentStatus"], result["reason"], result["jobStatus"]) == (
        "Failed",
        "DeadlineExceeded",
        "RUNNING",
    )
    assert _on_time(_elapsed(result), 600), _elapsed(result)


async def test_grace_period_after_the_job_ended_but_the_submitter_did_not(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(submitter_outcome="never", config=OperatorConfig(job_transition_grace_seconds=120))
    result = await _run(time_skipping_env, fake_worker, world, rayjob_manifest(mode="K8sJobMode"))

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert result["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"
    assert result["message"] == GRACE_PERIOD_MESSAGE
    # Counted from the Ray job's end (rayJobInfo.endTime, whole seconds).
    assert _on_time(_time(result["endTime"]) - _time(result["rayJobInfo"]["endTime"]), 120)
    assert result["succeeded"] == 1


async def test_submitter_finished_but_the_ray_job_did_not(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(submitter_outcome="immediately", job_scripts=[RUNS_FOREVER])
    result = await _run(time_skipping_env, fake_worker, world, rayjob_manifest(mode="K8sJobMode"))

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Failed", "FAILED")
    assert result["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"
    finished = world.jobs["sample"]["status"]["conditions"][0]["lastTransitionTime"]
    finished_at = _time(finished)
    stamp = finished_at.strftime("%Y-%m-%d %H:%M:%S")
    assert result["message"] == (
        f"The RayJob submitter finished at {stamp} but the ray job did not reach terminal state within 30s"
    )
    assert _on_time(_time(result["endTime"]) - finished_at, 30)


async def test_a_failed_submitter_is_a_submission_failure(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(submitter_outcome="fails")
    result = await _run(time_skipping_env, fake_worker, world, rayjob_manifest(mode="K8sJobMode"))
    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "SubmissionFailed")
    assert result["message"] == (
        "Job submission has failed. Reason: BackoffLimitExceeded. "
        "Message: Job has reached the specified backoff limit"
    )


async def test_failing_status_checks_time_out_and_are_not_retried(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(dashboard_unavailable=True, config=OperatorConfig(job_status_check_timeout_seconds=90))
    result = await _run(time_skipping_env, fake_worker, world, rayjob_manifest(backoffLimit=3))

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "JobStatusCheckTimeoutExceeded")
    assert result["message"].startswith("Job status checks have been failing since ")
    assert result["message"].endswith("; exceeded timeout of 90s")
    assert result["failed"] == 1
    # The workflow looked for its cluster once when the checks started failing, and found it.
    assert len(world.called(names.GET_RAYCLUSTER)) == 1
