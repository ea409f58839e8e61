"""A new worker restarts the observers' activities at once, the Ray job observer's and the Kubernetes
observer's (dev server, fake observer activities): after a kill -9 the lost attempt would otherwise be retried
only when its heartbeat times out (20 s; tests/workflows/observer/test_lost_worker.py).
The new activity runs under a newer epoch; the replaced one, if it still runs, stops at its next read of the
book."""

from __future__ import annotations

import asyncio

import pytest
from temporalio import activity
from temporalio.testing import WorkflowEnvironment

from activities.observer import restart_observers
from raypilot.testing.rayjob_scenarios import eventually
from tests.workflows.observer.observer_support import OBSERVERS, FakeWorker, start_observer
from wire.kubernetes_observer import ObserveKubernetes
from wire.observer import ObserveJobs, is_replaced


@pytest.mark.parametrize("kind", sorted(OBSERVERS))
async def test_a_started_worker_restarts_the_observer_activity(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker, kind: str
) -> None:
    client = dev_server_env.client
    observer = OBSERVERS[kind]
    epochs: list[int] = []
    stopped: list[int] = []

    @activity.defn(name=observer.activity_name)
    async def observe(request: ObserveJobs | ObserveKubernetes) -> None:
        epochs.append(request.epoch_ms)
        handle = client.get_workflow_handle(request.observer_id)
        while True:
            changes = await handle.query(observer.query, 0, result_type=observer.changes_type)
            if is_replaced(changes.epoch_ms, request.epoch_ms):
                stopped.append(request.epoch_ms)
                return
            activity.heartbeat()
            await asyncio.sleep(0.05)

    async with fake_worker(client, workflows=[observer.workflow], activities=[observe]) as queue:
        handle = await start_observer(client, observer, queue)
        try:

            async def started() -> bool:
                return len(epochs) == 1

            await eventually(started)
            told: list[int] = []

            async def listed() -> bool:
                # Visibility lags the start by a moment: ask until the observer is listed.
                told.append(await restart_observers(client, queue, "new-worker"))
                return told[-1] > 0

            await eventually(listed)
            assert told[-1] == 1

            async def replaced() -> bool:
                return len(epochs) == 2 and stopped == epochs[:1]

            await eventually(replaced)
        finally:
            await handle.terminate("test over")

    assert epochs[1] > epochs[0]
    # Another raypilot deployment (task queue) has its own observers, run by its own workers.
    assert observer.workflow_id("staging", "team-a") != observer.workflow_id("raypilot", "team-a")
