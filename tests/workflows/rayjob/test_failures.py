"""RayJobWorkflow failure paths: application failures, retries and counters, every deadline with KubeRay's
reason and message, submitter failures and failing status checks (time-skipping, fake activities)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from models.operator import OperatorConfig
from raypilot.testing.rayjob_scenarios import rayjob_manifest
from raypilot.testing.rayjob_world import FAILS, RUNS_FOREVER, SUCCEEDS, FakeWorld
from tests.workflows.rayjob.rayjob_support import FakeWorker, completed_run
from tests.workflows.timer_dues import timer_dues
from wire import names
from workflows.decisions.rayjob.deadlines import GRACE_PERIOD_MESSAGE


async def _run(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: FakeWorld, manifest: dict[str, Any]
) -> dict[str, Any]:
    _, result = await completed_run(env, fake_worker, world, manifest)
    return result


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# How far a durable timer's due instant, as the history shows it, may lie from a whole-second timestamp plus
# the deadline: the timestamp drops the fraction of the instant it stands for, and the history's task start
# is a few milliseconds off the workflow time the task counted from.
TIMESTAMP_ROUNDING = timedelta(seconds=1)


async def assert_ended_by_its_timer(
    handle: WorkflowHandle[Any, Any], result: dict[str, Any], since: datetime, seconds: int
) -> None:
    """The RayJob ended no earlier than `seconds` after `since`, woken by a durable timer set for that
    instant. The timer's instant is the workflow's decision; the pass it wakes takes a fresh look at the Ray
    job (a job that ended in time must not fail) before it stamps endTime, which a loaded machine makes late
    by any amount (the test server's clock runs while a task does)."""
    due = since + timedelta(seconds=seconds)
    assert _time(result["endTime"]) >= due, (result["endTime"], due)
    dues = timer_dues(await handle.fetch_history())
    assert any(abs(timer - due) <= TIMESTAMP_ROUNDING for timer in dues), (due, dues)


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
    # KubeRay's Events, and raypilot's DriverLogSaved of the failed attempt before its cluster went.
    assert world.event_reasons() == [
        "CreatedRayCluster",
        "CreatedRayJobSubmitter",
        "CreatedService",
        "DriverLogSaved",
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
    handle, result = await completed_run(time_skipping_env, fake_worker, world, manifest)

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", reason)
    start_time = _time(result["startTime"]).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")
    capitalized = field[0].upper() + field[1:]
    assert result["message"] == (
        f"The RayJob has passed the {field}. StartTime: {start_time}. {capitalized}: {seconds}"
    )
    await assert_ended_by_its_timer(handle, result, _time(result["startTime"]), seconds)
    assert result["failed"] == attempts
    assert len(world.called(names.CREATE_RAYCLUSTER)) == attempts


async def test_active_deadline_while_running(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[RUNS_FOREVER])
    manifest = rayjob_manifest(activeDeadlineSeconds=600)
    handle, result = await completed_run(time_skipping_env, fake_worker, world, manifest)
    assert (result["jobDeploymentStatus"], result["reason"], result["jobStatus"]) == (
        "Failed",
        "DeadlineExceeded",
        "RUNNING",
    )
    await assert_ended_by_its_timer(handle, result, _time(result["startTime"]), 600)


async def test_grace_period_after_the_job_ended_but_the_submitter_did_not(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(submitter_outcome="never", config=OperatorConfig(job_transition_grace_seconds=120))
    handle, result = await completed_run(
        time_skipping_env, fake_worker, world, rayjob_manifest(mode="K8sJobMode")
    )

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert result["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"
    assert result["message"] == GRACE_PERIOD_MESSAGE
    # Counted from the Ray job's end (rayJobInfo.endTime, whole seconds).
    await assert_ended_by_its_timer(handle, result, _time(result["rayJobInfo"]["endTime"]), 120)
    assert result["succeeded"] == 1


async def test_submitter_finished_but_the_ray_job_did_not(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(submitter_outcome="immediately", job_scripts=[RUNS_FOREVER])
    handle, result = await completed_run(
        time_skipping_env, fake_worker, world, rayjob_manifest(mode="K8sJobMode")
    )

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Failed", "FAILED")
    assert result["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"
    finished = world.jobs["sample"]["status"]["conditions"][0]["lastTransitionTime"]
    finished_at = _time(finished)
    stamp = finished_at.strftime("%Y-%m-%d %H:%M:%S")
    assert result["message"] == (
        f"The RayJob submitter finished at {stamp} but the ray job did not reach terminal state within 30s"
    )
    await assert_ended_by_its_timer(handle, result, finished_at, 30)


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
