"""When the worker running an observer's activity dies and no worker starts (one of two workers killed), the
server retries the activity once its heartbeat times out, and another worker runs it: that timeout is how
long the dead worker's observers stay silent. The brief's bound is 30 s (P10 measures it on the real stack).

Time-skipping test server, fake observer activities: the first attempt stands for an activity on a worker
that was killed (it never heartbeats again and never returns); the second attempt must start within 30 s of
workflow time. The observer's own heartbeat (`ObserverHeartbeat`) beats while a round is held up, so a busy
worker is never taken for a dead one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import timedelta

import pytest
from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.observer_fanout import ObserverHeartbeat
from wire import names
from wire.dashboard import DashboardTarget
from wire.kubernetes_observer import (
    KUBE_OBSERVER_WORKFLOW,
    KUBE_WATCH_SIGNAL,
    ObjectWatch,
    ObserveKubernetes,
    kube_observer_workflow_id,
)
from wire.observer import OBSERVER_WORKFLOW, WATCH_SIGNAL, JobWatch, ObserveJobs, observer_workflow_id
from workflows.observer.kubernetes import KubernetesObserverWorkflow
from workflows.observer.workflow import RayJobObserverWorkflow

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
RECOVERY_BOUND = timedelta(seconds=30)

OBSERVERS = {
    "ray-jobs": (
        RayJobObserverWorkflow, OBSERVER_WORKFLOW, names.OBSERVE_RAY_JOBS, WATCH_SIGNAL,
        JobWatch(DashboardTarget("ns", "cluster-head-svc"), "job-1", "rayjob/ns/job"), observer_workflow_id,
    ),
    "kubernetes": (
        KubernetesObserverWorkflow, KUBE_OBSERVER_WORKFLOW, names.OBSERVE_K8S_NAMESPACE, KUBE_WATCH_SIGNAL,
        ObjectWatch("RayCluster", "ns", "cluster", "rayjob/ns/job"), kube_observer_workflow_id,
    ),
}  # fmt: skip


# Slow: the lost attempt stays in flight, which holds the test server's clock, so its 30 s pass in real time.
@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(OBSERVERS))
async def test_a_dead_workers_observer_runs_again_within_30_s_though_no_worker_starts(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, kind: str
) -> None:
    workflow_class, workflow_type, activity_name, signal, watch, workflow_id = OBSERVERS[kind]
    client = time_skipping_env.client
    first_started, released = asyncio.Event(), asyncio.Event()

    @activity.defn(name=activity_name)
    async def observe(request: ObserveJobs | ObserveKubernetes) -> None:
        if activity.info().attempt == 1:
            first_started.set()
            # The killed worker's attempt: no heartbeat, no answer, ever (released at the test's end).
            await released.wait()
            return
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.05)

    async with fake_worker(client, workflows=[workflow_class], activities=[observe]) as queue:
        handle = await client.start_workflow(
            workflow_type,
            "ns",
            id=workflow_id(queue, "ns"),
            task_queue=queue,
            start_signal=signal,
            start_signal_args=[watch],
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        try:
            await first_started.wait()
            await time_skipping_env.sleep(RECOVERY_BOUND)
            # The server's own account: the lost attempt timed out and the next one is under way.
            [pending] = (await handle.describe()).raw_description.pending_activities
            assert pending.attempt == 2
        finally:
            released.set()
            await handle.terminate("test over")


async def test_the_observer_heartbeat_beats_while_a_round_is_held_up() -> None:
    env = ActivityEnvironment()
    beats: list[tuple[object, ...]] = []
    three_beats = asyncio.Event()

    def on_heartbeat(*details: object) -> None:
        beats.append(details)
        if len(beats) >= 3:
            three_beats.set()

    env.on_heartbeat = on_heartbeat

    async def observe() -> None:
        async with ObserverHeartbeat(period_s=0.01) as heartbeat:
            heartbeat.note({"watches": 2000})
            await three_beats.wait()  # a round that does not come back (thousands of signals, say)

    await asyncio.wait_for(env.run(observe), timeout=30)
    assert beats[:3] == [({"watches": 2000},)] * 3
