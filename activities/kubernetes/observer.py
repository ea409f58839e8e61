"""The Kubernetes observer of a namespace (see `wire.kubernetes_observer`): registering a watch, and the one
long-lived activity per namespace that follows its RayClusters, Jobs and head Pods (`NamespaceCache`) and
signals each watching workflow when the view of its object changed.

Costs: three watch streams per namespace; one `watches` query every `book_seconds` (no history, but a
workflow task of the observer on a worker and a request to the server: the rounds that the objects' changes
wake in between, at most every `ROUND_SECONDS`, deliver to the watches already read, and a new watch waits
for the next read as a Ray job watch waits for its observer's next tick); one signal per watch per change;
one GET per new watch whose object the cache does not hold (to tell "not created yet in the cache" from
"gone"); a heartbeat every two minutes. A retried attempt (a lost worker) lists again with nothing sent,
so every watch gets its object's current view once: no change is lost, and workflows drop the views they
have.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Final

from temporalio import activity
from temporalio.client import Client, WorkflowHandle

from activities.kubernetes.namespace_cache import FOLLOWED, NamespaceCache
from activities.kubernetes.workloads import head_pod_selector
from activities.observer_fanout import (
    ObserverHeartbeat,
    read_book,
    register_watch,
    signal_deliveries,
    unwatch_done,
)
from wire import stubs
from wire.kubernetes import Observation
from wire.kubernetes_observer import (
    KUBE_OBSERVED_SIGNAL,
    KUBE_OBSERVER_WORKFLOW,
    KUBE_UNWATCH_KEYS_SIGNAL,
    KUBE_WATCH_SIGNAL,
    KUBE_WATCHES_QUERY,
    ObjectDelivery,
    ObjectWatch,
    ObjectWatchChanges,
    ObservedKind,
    ObservedObject,
    ObserveKubernetes,
    ends_watch,
    kube_observer_workflow_id,
    object_deliveries,
)
from wire.stubs.common import implements
from wire.watch_book import BookCopy

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies


# While objects change, a round at most this often (changes in between go out together).
ROUND_SECONDS: Final = 0.1


def book_read_due(read_at: float | None, now: float, book_seconds: float) -> bool:
    """Whether a round reads the book (the `watches` query): the first round, then once `book_seconds` have
    passed since the last read (monotonic seconds)."""
    return read_at is None or now - read_at >= book_seconds


def seconds_to_book_read(read_at: float | None, now: float, book_seconds: float) -> float:
    """How long a round without changes waits before the next: until the next read of the book is due."""
    if read_at is None:
        return 0.0
    return max(0.0, book_seconds - (now - read_at))


class KubernetesObserverActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @implements(stubs.watch_object)
    async def watch_object(self, request: ObjectWatch) -> bool:
        """Signal-with-start of the namespace's Kubernetes observer: idempotent (one observer per id; a
        watch registered again asks for its object's view again). False on a worker without a Temporal
        client: the RayJob then waits with the per-object wait activity."""
        observer_id = kube_observer_workflow_id(activity.info().task_queue, request.namespace)
        client = self.dependencies.temporal_client
        return await register_watch(
            client, KUBE_OBSERVER_WORKFLOW, request.namespace, observer_id, KUBE_WATCH_SIGNAL, request
        )

    @implements(stubs.observe_namespace)
    async def observe_namespace(self, request: ObserveKubernetes) -> None:
        """Runs until cancelled (no watch left) or the attempt's time is up (then retried at once)."""
        client = self.dependencies.require_temporal_client()
        observer = client.get_workflow_handle(request.observer_id)
        attempt = activity.info().attempt
        book: BookCopy[ObjectWatch, dict[str, Any]] = BookCopy(dict[str, ObjectWatch])
        # Objects this attempt has seen exist (in the cache or by a direct read).
        seen: set[str] = set()
        rounds = 0
        read_at: float | None = None
        async with (
            ObserverHeartbeat() as heartbeat,
            NamespaceCache(self.dependencies.apiserver(), request.namespace) as cache,
        ):
            await cache.wait_synced()
            while True:
                rounds += 1
                added: dict[str, ObjectWatch] | None = {}
                if book_read_due(read_at, time.monotonic(), request.book_seconds):
                    read_at = time.monotonic()
                    added = await read_book(
                        book, observer, KUBE_WATCHES_QUERY, ObjectWatchChanges, request.epoch_ms
                    )
                if added is None:
                    return
                fresh: set[str] = set()
                for key, watch in added.items():
                    # (Re-)registered: its view goes out unless the workflow holds it already.
                    book.sent.pop(key, None)
                    if watch.last_view is not None:
                        book.sent[key] = watch.last_view
                    fresh.add(watch.object)
                looked = await self._look(cache, book.watches, seen, cache.take_dirty() | fresh)
                found = object_deliveries(book.watches, looked, book.sent)
                if found:
                    version = (request.epoch_ms, attempt, rounds)
                    await self._deliver(client, observer, book.watches, found, book.sent, version)
                heartbeat.note(
                    {"watches": len(book.watches), "lists": cache.lists, "watchRequests": cache.watches}
                )
                until_read = seconds_to_book_read(read_at, time.monotonic(), request.book_seconds)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(cache.changed.wait(), until_read)
                await asyncio.sleep(ROUND_SECONDS)

    async def _look(
        self,
        cache: NamespaceCache,
        watches: dict[str, ObjectWatch],
        seen: set[str],
        objects: set[str],
    ) -> dict[str, Observation]:
        """The observations of the watched objects among `objects`. A watched object that the cache does
        not hold and this attempt never saw is read once directly: it may have been created after the last
        event that reached the cache, and "gone" would make a RayJob create its cluster again."""
        watched = {watch.object: watch for watch in watches.values()}
        looked: dict[str, Observation] = {}
        for key in objects:
            watch = watched.get(key)
            if watch is None:
                continue
            observation = cache.observation(key)
            if observation.object is None and key not in seen:
                for item in await self._read(watch.kind, watch.namespace, watch.name):
                    cache.put(watch.kind, item)
                observation = cache.observation(key)
            seen.add(key)
            looked[key] = observation
        return looked

    async def _read(self, kind: ObservedKind, namespace: str, name: str) -> list[dict[str, Any]]:
        followed = next(f for f in FOLLOWED if f.kind == kind)
        api = self.dependencies.apiserver()
        what = f"read {followed.resource.describe(namespace)} {name!r}"
        if kind == "HeadPod":
            listing = await api.get_json(
                followed.resource.path(namespace), what, {"labelSelector": head_pod_selector(name)}
            )
            items = list((listing or {}).get("items") or [])
        else:
            found = await api.get_json(followed.resource.path(namespace, name), what)
            items = [found] if found is not None else []
        for item in items:
            item.setdefault("apiVersion", followed.resource.api_version)
            item.setdefault("kind", followed.resource.kind)
        return items

    async def _deliver(
        self,
        client: Client,
        observer: WorkflowHandle[Any, Any],
        watches: dict[str, ObjectWatch],
        found: list[ObjectDelivery],
        sent: dict[str, dict[str, Any]],
        version: tuple[int, int, int],
    ) -> None:
        def delivered(delivery: ObjectDelivery) -> bool:
            sent[delivery.key] = delivery.observation.view
            return ends_watch(delivery.watch.until, delivery.watch.kind, delivery.observation.view)

        done = await signal_deliveries(
            client,
            found,
            KUBE_OBSERVED_SIGNAL,
            lambda delivery: ObservedObject(
                delivery.watch.kind, delivery.watch.name, delivery.observation, version
            ),
            delivered,
        )
        await unwatch_done(observer, watches, done, KUBE_UNWATCH_KEYS_SIGNAL)
