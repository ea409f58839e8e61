"""The RayCronJobTick workflow on the time-skipping server (which has no Schedules: the schedule itself is
tested on the dev server, tests/integration/test_raycronjob_schedule.py): each tick becomes one RayJobWorkflow
with the contract's id and KubeRay's label and annotation, a tick fired again runs nothing twice, a cancelled
tick (concurrencyPolicy Replace) deletes its RayJob, and the history limits delete the oldest finished
RayJobs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tests.workflows.raycronjob.fakes_raycronjob import (
    FakeCronJobWorld,
    FakeRayJobWorkflow,
    cronjob_manifest,
    finished_run,
)
from workflows.raycronjob.workflow import RayCronJobTickWorkflow

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
Worker = AbstractAsyncContextManager[str]
TICK = "raycronjob/jobs/nightly-2026-11-25T13:45:00Z"
# 2026-11-25T13:45:00Z in Unix minutes.
RAYJOB_ID = "rayjob/jobs/nightly-29926905"
WORKFLOWS = [RayCronJobTickWorkflow, FakeRayJobWorkflow]


@pytest.fixture
def world(time_skipping_env: WorkflowEnvironment) -> FakeCronJobWorld:
    return FakeCronJobWorld(time_skipping_env.client)


@pytest.fixture
def ticking(fake_worker: FakeWorker, world: FakeCronJobWorld) -> Worker:
    """A worker (to enter) of the tick workflow and a fake RayJobWorkflow over the world; gives its queue."""
    return fake_worker(world.client, activities=world.activities(), workflows=WORKFLOWS)


async def tick(client: Client, queue: str, manifest: dict[str, Any], tick_id: str = TICK) -> dict[str, Any]:
    result: dict[str, Any] = await client.execute_workflow(
        "RayCronJobTick", manifest, id=tick_id, task_queue=queue, result_type=dict
    )
    return result


async def test_a_tick_runs_one_rayjob_with_the_contracts_id_label_and_annotation(
    world: FakeCronJobWorld, ticking: Worker
) -> None:
    client = world.client
    async with ticking as queue:
        result = await tick(client, queue, cronjob_manifest())
        rayjob = await client.get_workflow_handle(RAYJOB_ID).result()
    assert result == {
        "rayJob": "nightly-29926905",
        "scheduledTime": "2026-11-25T13:45:00Z",
        "outcome": "Finished",
        "jobDeploymentStatus": "Complete",
        "jobStatus": "SUCCEEDED",
        "pruned": [],
    }
    assert rayjob["metadata"] == {
        "name": "nightly-29926905",
        "namespace": "jobs",
        "labels": {"ray.io/cronjob-name": "nightly"},
        "annotations": {"ray.io/cronjob-scheduled-timestamp": "2026-11-25T13:45:00Z"},
    }


async def test_a_tick_fired_again_runs_nothing_twice(world: FakeCronJobWorld, ticking: Worker) -> None:
    client = world.client
    async with ticking as queue:
        first = await tick(client, queue, cronjob_manifest())
        first_run = (await client.get_workflow_handle(RAYJOB_ID).describe()).run_id
        again = await tick(client, queue, cronjob_manifest())
        # Another tick within the same minute (a manual trigger) is the same RayJob too, as in KubeRay.
        same_minute = await tick(
            client, queue, cronjob_manifest(), "raycronjob/jobs/nightly-2026-11-25T13:45:30Z"
        )
        latest_run = (await client.get_workflow_handle(RAYJOB_ID).describe()).run_id
    assert first["outcome"] == "Finished"
    assert again == {
        "rayJob": "nightly-29926905",
        "scheduledTime": "2026-11-25T13:45:00Z",
        "outcome": "AlreadyStarted",
    }
    assert same_minute["outcome"] == "AlreadyStarted"
    assert latest_run == first_run  # the RayJob ran once


async def test_a_cancelled_tick_deletes_its_rayjob_and_waits_for_it(
    world: FakeCronJobWorld, ticking: Worker
) -> None:
    client = world.client
    async with ticking as queue:
        handle = await client.start_workflow(
            "RayCronJobTick", cronjob_manifest(entrypoint="run 5"), id=TICK, task_queue=queue
        )
        rayjob = client.get_workflow_handle(RAYJOB_ID)
        await _until(lambda: _started(client, RAYJOB_ID))
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        final = await rayjob.result()
        memo = await (await rayjob.describe()).memo()
    assert isinstance(failure.value.cause, CancelledError)
    assert world.deletion_requests == [RAYJOB_ID]
    assert final["jobStatus"] == "STOPPED"
    assert memo["raypilot.io/outcome"] == "deleted"


async def test_history_limits_delete_the_oldest_finished_rayjobs(
    world: FakeCronJobWorld, ticking: Worker
) -> None:
    client = world.client
    world.runs = [
        finished_run(29926900),
        finished_run(29926901),
        finished_run(29926902, succeeded=False),
        finished_run(29926903, succeeded=False),
        finished_run(29926904),
    ]
    limits = '{"successfulJobsHistoryLimit": 2, "failedJobsHistoryLimit": 1}'
    manifest = cronjob_manifest(annotations={"raypilot.io/schedule": limits})
    async with ticking as queue:
        result = await tick(client, queue, manifest)
    assert result["pruned"] == ["nightly-29926900", "nightly-29926901", "nightly-29926902"]
    # Its own RayJob (29926905, succeeded) counts: the two newest successes and the newest failure stay.
    assert world.deleted == [
        "rayjob/jobs/nightly-29926900",
        "rayjob/jobs/nightly-29926901",
        "rayjob/jobs/nightly-29926902",
    ]


async def test_a_rayjob_that_fails_or_is_invalid_ends_the_tick_normally(
    world: FakeCronJobWorld, ticking: Worker
) -> None:
    client = world.client
    async with ticking as queue:
        failed = await tick(client, queue, cronjob_manifest(entrypoint="fail"))
        invalid = await tick(
            client,
            queue,
            cronjob_manifest(entrypoint="invalid"),
            "raycronjob/jobs/nightly-2026-11-26T13:45:00Z",
        )
    assert (failed["outcome"], failed["jobDeploymentStatus"], failed["jobStatus"]) == (
        "Finished",
        "Failed",
        "FAILED",
    )
    assert (invalid["outcome"], invalid["jobDeploymentStatus"]) == ("Finished", "Failed")


async def _started(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def _until(probe: Callable[[], Any]) -> None:
    deadline = asyncio.get_running_loop().time() + 30.0
    while not await probe():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.1)
