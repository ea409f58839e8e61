"""A new worker restarts the job observers' activities at once (dev server, fake observer activity): after a
kill -9 the lost attempt would otherwise be retried only when its heartbeat times out (minutes). The new
activity lists under a newer epoch; the replaced one, if it still runs, stops at its next tick."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment

from activities.observer import restart_observers
from raypilot.testing.rayjob_scenarios import eventually
from wire import names
from wire.dashboard import DashboardTarget
from wire.observer import (
    OBSERVER_WORKFLOW,
    WATCH_SIGNAL,
    WATCHES_QUERY,
    JobWatch,
    ObserveJobs,
    WatchChanges,
    is_replaced,
    observer_workflow_id,
)
from workflows.observer.workflow import RayJobObserverWorkflow

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]


async def test_a_started_worker_restarts_the_observer_activity(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    client = dev_server_env.client
    epochs: list[int] = []
    stopped: list[int] = []

    @activity.defn(name=names.OBSERVE_RAY_JOBS)
    async def observe_jobs(request: ObserveJobs) -> None:
        epochs.append(request.epoch_ms)
        observer = client.get_workflow_handle(request.observer_id)
        while True:
            changes = await observer.query(WATCHES_QUERY, 0, result_type=WatchChanges)
            if is_replaced(changes, request.epoch_ms):
                stopped.append(request.epoch_ms)
                return
            activity.heartbeat()
            await asyncio.sleep(0.05)

    async with fake_worker(client, workflows=[RayJobObserverWorkflow], activities=[observe_jobs]) as queue:
        observer_id = observer_workflow_id(queue, "ns")
        watch = JobWatch(DashboardTarget("ns", "cluster-head-svc"), "job-1", "rayjob/ns/job")
        handle = await client.start_workflow(
            OBSERVER_WORKFLOW,
            "ns",
            id=observer_id,
            task_queue=queue,
            start_signal=WATCH_SIGNAL,
            start_signal_args=[watch],
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
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
