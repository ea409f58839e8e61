"""Queueing on a shared cluster under time skipping: clusterSelector RayJobs on a RayCluster annotated
`raypilot.io/max-concurrent-jobs` run at most that many at once, the others wait in arrival order with their
place in the status, and a slot comes back when a RayJob finishes, is deleted while waiting, or its workflow
is terminated. The RayJobs run on fake activities; the admission workflow and its activities are real."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import Any, Literal

import pytest
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from activities.admission import AdmissionActivities
from activities.dependencies import ActivityDependencies
from activities.registry import activity_methods
from bench.p4_history import Cost, cost_of
from raypilot.testing.rayjob_scenarios import (
    eventually,
    rayjob_manifest,
    shared_cluster,
    start,
    status_of,
)
from raypilot.testing.rayjob_world import RUNS_FOREVER, SUCCEEDS, FakeWorld
from tests.workflows.rayjob.rayjob_support import activity_name
from wire import names
from wire.admission import QUEUE_QUERY, AdmissionTicket, OpenRuns, admission_workflow_id
from workflows.admission.workflow import LIVENESS_CHECK_INTERVAL
from workflows.decisions.admission import MAX_CONCURRENT_JOBS_ANNOTATION

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
Handle = WorkflowHandle[Any, Any]


def _world(limit: int, **fields: Any) -> FakeWorld:
    world = FakeWorld(**fields)
    cluster = shared_cluster()
    cluster["metadata"]["annotations"] = {MAX_CONCURRENT_JOBS_ANNOTATION: str(limit)}
    world.clusters["shared"] = cluster
    return world


def _job(name: str) -> dict[str, Any]:
    return rayjob_manifest(name, rayClusterSpec=None, clusterSelector={"ray.io/cluster": "shared"})


@asynccontextmanager
async def _worker(
    env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    world: FakeWorld,
    *,
    wait_runs_closed: Literal["real", "fake", "missing"] = "fake",
    fake_retry: timedelta = timedelta(minutes=1),
) -> AsyncIterator[str]:
    """A worker with the fake RayJob activities and the real admission ones; `wait_runs_closed` "fake" (by
    default): a wait that fails with a retry `fake_retry` (a minute) later while no holder closed (the real
    one, running all the while, holds the time-skipping server's time still), "missing": none (a worker from
    before it)."""
    admission = AdmissionActivities(ActivityDependencies.from_env({}, temporal_client=env.client))
    activities = [
        method
        for method in activity_methods(admission)
        if wait_runs_closed == "real" or activity_name(method) != names.WAIT_RUNS_CLOSED
    ]

    @activity.defn(name=names.WAIT_RUNS_CLOSED)
    async def fake_wait_runs_closed(request: OpenRuns) -> list[AdmissionTicket]:
        closed = await admission.closed_runs(request)
        if closed:
            return closed
        raise ApplicationError("no holder closed", type="FakeNoChange", next_retry_delay=fake_retry)

    if wait_runs_closed == "fake":
        activities.append(fake_wait_runs_closed)
    async with fake_worker(env.client, activities=world.activities() + activities) as queue:
        yield queue


def _submitted(world: FakeWorld) -> set[str]:
    """The Ray jobs submitted (a submission may be retried: each counts once)."""
    return {str(request.request["submission_id"]) for request in world.called(names.SUBMIT_JOB)}


def _queued_at(status: dict[str, Any]) -> int | None:
    """The place shown in the Queued condition (0: admitted), None before the RayJob asked."""
    for condition in status.get("conditions", []):
        if condition["type"] == "Queued":
            return 0 if condition["status"] == "False" else int(condition["message"].split()[1])
    return None


async def _start_in_order(client: Any, names: list[str], queue: str) -> list[Handle]:
    """Starts the RayJobs one after the other, each once the previous one has its place (arrival order)."""
    handles = []
    for name in names:
        handle = await start(client, _job(name), queue)

        async def placed(handle: Handle = handle) -> bool:
            return _queued_at(await status_of(handle)) is not None

        await eventually(placed)
        handles.append(handle)
    return handles


async def _places(handles: list[Handle]) -> list[int | None]:
    return [_queued_at(await status_of(handle)) for handle in handles]


async def test_at_most_the_limit_run_and_a_freed_slot_goes_to_the_next_in_line(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = _world(2, job_scripts=[RUNS_FOREVER])
    # The fake wait looks again 5 s later (not a minute): the RayJobs' waits in flight hold the test server's
    # clock, so a minute here is a minute of real time.
    async with _worker(time_skipping_env, fake_worker, world, fake_retry=timedelta(seconds=5)) as queue:
        handles = await _start_in_order(time_skipping_env.client, ["a", "b", "c", "d"], queue)
        assert await _places(handles) == [0, 0, 1, 2]
        phases = [(await status_of(handle))["jobDeploymentStatus"] for handle in handles]
        assert phases == ["Running", "Running", "Initializing", "Initializing"]
        assert len(_submitted(world)) == 2
        admission = time_skipping_env.client.get_workflow_handle(admission_workflow_id("default", "shared"))
        assert await admission.query(QUEUE_QUERY) == {
            "limit": 2,
            "running": ["rayjob/default/a", "rayjob/default/b"],
            "waiting": ["rayjob/default/c", "rayjob/default/d"],
        }
        await handles[1].execute_update("delete")

        async def next_in() -> bool:
            return await _places(handles[2:]) == [0, 1]

        await eventually(next_in)
        assert len(_submitted(world)) == 3
        for handle in (handles[0], handles[2], handles[3]):
            await handle.terminate("done")


@pytest.mark.skipif(
    int(os.environ.get("RAYPILOT_QUEUE_JOBS", "0")) < 50,
    reason="about 15 s: with the full queue run (RAYPILOT_QUEUE_JOBS=50); finishing RayJobs release their "
    "slots in make test through the sandbox test",
)
async def test_waiting_rayjobs_are_admitted_first_come_first_served(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = _world(1, job_scripts=[SUCCEEDS], job_duration=timedelta(seconds=30))
    async with _worker(time_skipping_env, fake_worker, world) as queue:
        handles = await _start_in_order(time_skipping_env.client, ["a", "b", "c"], queue)
        assert await _places(handles) == [0, 1, 2]
        results = [await handle.result() for handle in handles]

    spans = [(result["rayJobInfo"]["startTime"], result["rayJobInfo"]["endTime"]) for result in results]
    assert spans[0][1] <= spans[1][0]
    assert spans[1][1] <= spans[2][0]


async def test_a_rayjob_deleted_while_waiting_leaves_the_queue(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = _world(1, job_scripts=[RUNS_FOREVER])
    async with _worker(time_skipping_env, fake_worker, world) as queue:
        first, second, third = await _start_in_order(time_skipping_env.client, ["a", "b", "c"], queue)
        assert await _places([first, second, third]) == [0, 1, 2]
        await second.execute_update("delete")
        await second.result()

        async def moved_up() -> bool:
            return _queued_at(await status_of(third)) == 1

        await eventually(moved_up)
        await first.execute_update("delete")

        async def admitted() -> bool:
            return _queued_at(await status_of(third)) == 0

        await eventually(admitted)
        assert (await status_of(third))["jobDeploymentStatus"] == "Running"
        await third.terminate("done")


async def test_a_terminated_rayjob_gives_its_slot_back_as_its_run_closes(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = _world(1, job_scripts=[RUNS_FOREVER])
    # The real wait on the holders' runs: Temporal's long poll of the terminated run's close returns. No time
    # is skipped here (the clock runs at wall speed), so the admission cannot come from the minute's check.
    async with _worker(time_skipping_env, fake_worker, world, wait_runs_closed="real") as queue:
        first, second = await _start_in_order(time_skipping_env.client, ["a", "b"], queue)
        terminated_at = await time_skipping_env.get_current_time()
        await first.terminate("crashed")

        async def admitted() -> bool:
            return _queued_at(await status_of(second)) == 0

        await eventually(admitted)
        assert await time_skipping_env.get_current_time() - terminated_at < LIVENESS_CHECK_INTERVAL
        await second.terminate("done")


async def _queue_cost(
    env: WorkflowEnvironment, fake_worker: FakeWorker, wait: Literal["fake", "missing"], minutes: int
) -> Cost:
    """What the admission workflow writes and costs while one RayJob runs and another waits `minutes`."""
    world = _world(1, job_scripts=[RUNS_FOREVER])
    async with _worker(env, fake_worker, world, wait_runs_closed=wait) as queue:
        first, second = await _start_in_order(env.client, ["a", "b"], queue)
        admission = env.client.get_workflow_handle(admission_workflow_id("default", "shared"))
        await env.sleep(timedelta(seconds=90))  # past the first check (the fallback's first minute)
        since = await env.get_current_time()
        await env.sleep(timedelta(minutes=minutes))
        until = await env.get_current_time()
        assert _queued_at(await status_of(second)) == 1
        events = (await admission.fetch_history()).to_json_dict()["events"]
        for handle in (first, second, admission):
            await handle.terminate("done")  # the admission workflow too: the next worker has another queue
    return cost_of(events, since, until)


async def test_a_queue_costs_per_change_not_per_minute(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    """While RayJobs wait, the admission workflow waits on the holders' runs (temporal.wait_runs_closed)
    instead of checking them every minute: nothing in its history and a heartbeat a minute (measured in
    the same test against a worker without that activity, which falls back to the check a minute)."""
    minutes = 10
    waiting = await _queue_cost(time_skipping_env, fake_worker, "fake", minutes)
    checking = await _queue_cost(time_skipping_env, fake_worker, "missing", minutes)
    # The check a minute: a timer and a local activity (its marker) per minute, with their workflow task.
    assert checking.events >= 6 * minutes
    assert checking.actions >= 2 * minutes
    assert checking.heartbeats == 0
    # The wait: no event while nothing changes; its heartbeats, one a minute, are the only actions.
    assert waiting.events == 0
    assert waiting.heartbeats <= minutes + 1
    assert waiting.billable < checking.billable
