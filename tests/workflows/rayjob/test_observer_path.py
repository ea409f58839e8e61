"""The RayJob workflow's observer path and its safety nets, on the fake world (time-skipping server): the
hourly check finds a job end that no observer reported, and an overdue submitter-finished deadline looks at
the job once before failing it (a starved worker had not delivered the newest view)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.operator import OperatorConfig
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeWorld
from tests.workflows.rayjob.rayjob_support import with_fakes
from wire import names
from wire.dashboard import JobInfoAnswer, RayJobKey, WaitRayJob
from wire.observer import JobWatch

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
ENDED: tuple[str, ...] = ("SUCCEEDED",)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_the_hourly_check_finds_an_end_no_observer_reported(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    # An observer that registers and then says nothing (terminated by hand, its book gone).
    world = FakeWorld(config=OperatorConfig(job_observer=True), job_scripts=[ENDED])
    watches: list[JobWatch] = []

    @activity.defn(name=names.WATCH_RAY_JOB)
    async def silent_watch(request: JobWatch) -> bool:
        watches.append(request)
        return True

    async with fake_worker(time_skipping_env.client, activities=with_fakes(world, silent_watch)) as queue:
        handle = await start(time_skipping_env.client, rayjob_manifest(), queue)
        result: dict[str, Any] = await handle.result()

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    # Registered when running, again at the check (which restarts a lost observer), then read the job.
    assert [watch.submission_id for watch in watches] == [result["jobId"]] * 2
    assert world.called(names.GET_JOB_INFO) != []
    assert (
        timedelta(hours=1)
        <= _time(result["endTime"]) - _time(result["startTime"])
        < timedelta(hours=1, minutes=1)
    )
    assert world.called(names.WAIT_RAY_JOB) == []


async def test_an_overdue_submitter_deadline_looks_at_the_job_before_failing_it(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    # The submitter finishes at once, when the job still runs (the read then says RUNNING); the job succeeds
    # within the 30 s, but the worker is too busy to deliver that view (its job wait never gets to report)
    # before the 30 s rule is due.
    world = FakeWorld(submitter_outcome="immediately", job_scripts=[ENDED])
    reads: list[str] = []

    @activity.defn(name=names.WAIT_RAY_JOB)
    async def starved_wait(request: WaitRayJob) -> JobInfoAnswer:
        raise ApplicationError("no slot for this wait yet", type="FakeNoChange")

    @activity.defn(name=names.GET_JOB_INFO)
    async def get_job_info(key: RayJobKey) -> JobInfoAnswer:
        reads.append(key.submission_id)
        status = "RUNNING" if len(reads) == 1 else "SUCCEEDED"
        return JobInfoAnswer("found", status=status, message=f"Job is {status.lower()}")

    fakes = with_fakes(world, starved_wait, get_job_info)
    async with fake_worker(time_skipping_env.client, activities=fakes) as queue:
        handle = await start(time_skipping_env.client, rayjob_manifest(mode="K8sJobMode"), queue)
        result: dict[str, Any] = await handle.result()

    # KubeRay's rule applies to a job that did not get there, not to one whose view was late.
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert result.get("reason", "") == ""
    assert len(reads) == 2  # when the submitter finished, and the fresh look when the rule was due


async def test_a_worker_without_an_observer_polls_the_job_itself(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    # A worker without a Temporal client cannot register: the attempt falls back to the polling wait.
    world = FakeWorld(config=OperatorConfig(job_observer=True))

    @activity.defn(name=names.WATCH_RAY_JOB)
    async def no_observer(request: JobWatch) -> bool:
        return False

    async with fake_worker(time_skipping_env.client, activities=with_fakes(world, no_observer)) as queue:
        handle = await start(time_skipping_env.client, rayjob_manifest(), queue)
        result: dict[str, Any] = await handle.result()
        scheduled = [
            event.activity_task_scheduled_event_attributes.activity_type.name
            async for event in handle.fetch_history_events()
            if event.HasField("activity_task_scheduled_event_attributes")
        ]

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert names.WAIT_RAY_JOB in scheduled
