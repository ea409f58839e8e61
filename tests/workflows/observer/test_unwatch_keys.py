"""The observers forget every watch one `unwatch-keys` signal names (what their activity sends once per round
for the watches it found done) and keep the others; the one-key `unwatch` of earlier activities still works
(dev server, an observer activity that only waits)."""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import eventually
from tests.workflows.observer.observer_support import OBSERVERS, FakeWorker, start_observer
from wire import names
from wire.kubernetes_observer import (
    KUBE_UNWATCH_KEYS_SIGNAL,
    KUBE_UNWATCH_SIGNAL,
    KUBE_WATCH_SIGNAL,
    KUBE_WATCHES_QUERY,
    ObjectWatch,
    ObjectWatchChanges,
    ObserveKubernetes,
)
from workflows.observer.kubernetes import KubernetesObserverWorkflow


@activity.defn(name=names.OBSERVE_K8S_NAMESPACE)
async def waits_until_cancelled(request: ObserveKubernetes) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(0.1)


def _watch(cluster: str) -> ObjectWatch:
    return ObjectWatch("RayCluster", "ns", cluster, f"rayjob/ns/{cluster}", "ready")


async def test_one_signal_forgets_every_watch_it_names(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    client = dev_server_env.client
    watches = [_watch(name) for name in ("a", "b", "c", "d")]
    async with fake_worker(
        client, workflows=[KubernetesObserverWorkflow], activities=[waits_until_cancelled]
    ) as queue:
        handle = await start_observer(client, OBSERVERS["kubernetes"], queue, watches[0])
        try:
            for watch in watches[1:]:
                await handle.signal(KUBE_WATCH_SIGNAL, watch)

            async def booked() -> set[str]:
                changes = await handle.query(KUBE_WATCHES_QUERY, 0, result_type=ObjectWatchChanges)
                return set(changes.added)

            async def all_booked() -> bool:
                return await booked() == {watch.key for watch in watches}

            await eventually(all_booked)
            await handle.signal(KUBE_UNWATCH_KEYS_SIGNAL, [watches[0].key, watches[2].key, "unknown/key"])
            await handle.signal(KUBE_UNWATCH_SIGNAL, watches[3].key)

            async def forgotten() -> bool:
                return await booked() == {watches[1].key}

            await eventually(forgotten)
        finally:
            await handle.terminate("test over")
