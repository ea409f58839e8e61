"""A new worker restarts the observers' activities at once, the Ray job observer's and the Kubernetes
observer's (dev server, fake observer activities): after a kill -9 the lost attempt would otherwise be retried
only when its heartbeat times out (20 s; tests/workflows/observer/test_lost_worker.py).
The new activity runs under a newer epoch; the replaced one, if it still runs, stops at its next read of the
book."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import pytest
from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment

from activities.observer import restart_observers
from raypilot.testing.rayjob_scenarios import eventually
from wire import names
from wire.dashboard import DashboardTarget
from wire.kubernetes_observer import (
    KUBE_OBSERVER_WORKFLOW,
    KUBE_WATCH_SIGNAL,
    KUBE_WATCHES_QUERY,
    ObjectWatch,
    ObjectWatchChanges,
    ObserveKubernetes,
    kube_observer_workflow_id,
)
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
from workflows.observer.kubernetes import KubernetesObserverWorkflow
from workflows.observer.workflow import RayJobObserverWorkflow

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]


@dataclass(frozen=True)
class Observer:
    """One kind of observer: its workflow, activity name, query, first watch and id."""

    workflow: type
    workflow_type: str
    activity_name: str
    query: str
    changes_type: type
    watch_signal: str
    watch: Any
    workflow_id: Callable[[str, str], str]


OBSERVERS = {
    "ray-jobs": Observer(
        RayJobObserverWorkflow, OBSERVER_WORKFLOW, names.OBSERVE_RAY_JOBS, WATCHES_QUERY, WatchChanges,
        WATCH_SIGNAL, JobWatch(DashboardTarget("ns", "cluster-head-svc"), "job-1", "rayjob/ns/job"),
        observer_workflow_id,
    ),
    "kubernetes": Observer(
        KubernetesObserverWorkflow, KUBE_OBSERVER_WORKFLOW, names.OBSERVE_K8S_NAMESPACE, KUBE_WATCHES_QUERY,
        ObjectWatchChanges, KUBE_WATCH_SIGNAL, ObjectWatch("RayCluster", "ns", "cluster", "rayjob/ns/job"),
        kube_observer_workflow_id,
    ),
}  # fmt: skip


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
        handle = await client.start_workflow(
            observer.workflow_type,
            "ns",
            id=observer.workflow_id(queue, "ns"),
            task_queue=queue,
            start_signal=observer.watch_signal,
            start_signal_args=[observer.watch],
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
    # Another raypilot deployment (task queue) has its own observers, run by its own workers.
    assert observer.workflow_id("staging", "team-a") != observer.workflow_id("raypilot", "team-a")
