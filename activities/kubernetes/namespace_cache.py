"""A namespace's RayClusters, Jobs and head Pods as the Kubernetes observer sees them: one LIST then WATCH per
kind (from the list's resourceVersion; a 410 Gone lists again), kept in memory by observed object, with the
set of objects that changed since the observer last looked.

Cost: three watch requests per namespace, each renewed every `WATCH_SECONDS`, plus a relist per kind after a
410 or an error; nothing per RayJob.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from temporalio.exceptions import ApplicationError

from activities.errors import KUBERNETES_GONE
from activities.kubernetes.async_api import AsyncApiServer
from activities.kubernetes.resources import JOB, POD, RAYCLUSTER, Resource, trim_job, trim_object, trim_pod
from activities.kubernetes.workloads import pick_head_pod
from models.naming import CREATED_BY_RAYPILOT, LABEL_CREATED_BY, LABEL_NODE_TYPE
from wire.kubernetes import Observation
from wire.kubernetes_observer import ObservedKind, cached_object_key
from wire.views import job_view, pod_view, raycluster_view

log = logging.getLogger(__name__)

WATCH_SECONDS: Final = 60
RELIST_PAUSE_MAX_SECONDS: Final = 30.0
RAYPILOT_SELECTOR: Final = f"{LABEL_CREATED_BY}={CREATED_BY_RAYPILOT}"


@dataclass(frozen=True)
class Followed:
    kind: ObservedKind
    resource: Resource
    selector: str


# What the observer follows in a namespace: every RayCluster (a RayJob's clusterSelector picks one that
# raypilot did not create; a namespace holds few), raypilot's Jobs, and every head Pod (Pods carry KubeRay's
# labels, not raypilot's).
FOLLOWED: Final = (
    Followed("RayCluster", RAYCLUSTER, ""),
    Followed("Job", JOB, RAYPILOT_SELECTOR),
    Followed("HeadPod", POD, f"{LABEL_NODE_TYPE}=head"),
)


def observation_of(kind: ObservedKind, items: Mapping[str, dict[str, Any]]) -> Observation:
    """The trimmed object and view a wait activity would return for the object (`items`: its cached items
    by name; a head Pod's cluster may have several Pods while one is replaced)."""
    if kind == "HeadPod":
        head = pick_head_pod(items.values())
        return Observation(trim_pod(head) if head is not None else None, pod_view(head))
    current = next(iter(items.values()), None)
    if kind == "RayCluster":
        # Metadata and status only, as k8s.wait_raycluster returns it.
        return Observation(
            trim_object(current, spec=False) if current is not None else None, raycluster_view(current)
        )
    return Observation(trim_job(current) if current is not None else None, job_view(current))


class NamespaceCache:
    def __init__(self, api: AsyncApiServer, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        # kind -> observed object key -> item name -> item
        self.objects: dict[str, dict[str, dict[str, dict[str, Any]]]] = {f.kind: {} for f in FOLLOWED}
        self.dirty: set[str] = set()
        self.changed = asyncio.Event()
        self.synced = {f.kind: asyncio.Event() for f in FOLLOWED}
        self.lists = 0
        self.watches = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> NamespaceCache:
        self._tasks = [asyncio.create_task(self._follow(followed)) for followed in FOLLOWED]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def wait_synced(self) -> None:
        """Until each kind was listed once (before that, a missing object may only be unlisted yet)."""
        for event in self.synced.values():
            await event.wait()

    def take_dirty(self) -> set[str]:
        dirty, self.dirty = self.dirty, set()
        self.changed.clear()
        return dirty

    def observation(self, key: str) -> Observation:
        kind, _, _ = key.partition("/")
        return observation_of(kind, self.objects[kind].get(key) or {})  # type: ignore[arg-type]

    def put(self, kind: ObservedKind, obj: dict[str, Any]) -> None:
        """Adds an object read outside the watch (a confirming GET)."""
        self._store(kind, obj)

    def _store(self, kind: ObservedKind, obj: dict[str, Any]) -> None:
        key = cached_object_key(kind, obj)
        if key is None:
            return
        self.objects[kind].setdefault(key, {})[obj["metadata"]["name"]] = obj
        self._mark(key)

    def _drop(self, kind: ObservedKind, obj: Mapping[str, Any]) -> None:
        key = cached_object_key(kind, obj)
        if key is None:
            return
        items = self.objects[kind].get(key) or {}
        items.pop(str((obj.get("metadata") or {}).get("name")), None)
        if not items:
            self.objects[kind].pop(key, None)
        self._mark(key)

    def _mark(self, key: str) -> None:
        self.dirty.add(key)
        self.changed.set()

    def _count_watch(self) -> None:
        self.watches += 1

    async def _follow(self, followed: Followed) -> None:
        path = followed.resource.path(self.namespace)
        params = {"labelSelector": followed.selector} if followed.selector else {}
        what = f"observe {followed.resource.describe(self.namespace)} ({followed.selector or 'all'})"
        pause = 1.0
        while True:
            try:
                version = await self._list(followed, path, params, what)
                pause = 1.0
                watched = self.api.watch_from(
                    path, params, version, WATCH_SECONDS, what, on_request=self._count_watch
                )
                async with contextlib.aclosing(watched):  # a cancelled follower ends its request at once
                    async for event in watched:
                        if event.get("type") == "BOOKMARK":
                            continue
                        obj = event.get("object") or {}
                        obj.setdefault("apiVersion", followed.resource.api_version)
                        obj.setdefault("kind", followed.resource.kind)
                        if event.get("type") == "DELETED":
                            self._drop(followed.kind, obj)
                        else:
                            self._store(followed.kind, obj)
            except ApplicationError as error:
                if error.type == KUBERNETES_GONE:
                    log.info("%s: watch expired (%s); listing again", what, error.message)
                    continue
                log.warning("%s failed: %s; listing again in %.0f s", what, error.message, pause)
            except Exception as error:  # a follower must never die silently: the cache would freeze
                log.warning("%s failed: %r; listing again in %.0f s", what, error, pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, RELIST_PAUSE_MAX_SECONDS)

    async def _list(self, followed: Followed, path: str, params: dict[str, str], what: str) -> str:
        """Lists the kind and replaces its cache; every object that appeared, changed or vanished is dirty."""
        self.lists += 1
        listing = await self.api.get_json(path, what, params) or {}
        fresh: dict[str, dict[str, dict[str, Any]]] = {}
        for item in listing.get("items") or []:
            item.setdefault("apiVersion", followed.resource.api_version)
            item.setdefault("kind", followed.resource.kind)
            key = cached_object_key(followed.kind, item)
            if key is not None:
                fresh.setdefault(key, {})[item["metadata"]["name"]] = item
        stale = self.objects[followed.kind]
        for key in set(stale) | set(fresh):
            if stale.get(key) != fresh.get(key):
                self._mark(key)
        self.objects[followed.kind] = fresh
        self.synced[followed.kind].set()
        self.changed.set()
        return str((listing.get("metadata") or {}).get("resourceVersion") or "")
