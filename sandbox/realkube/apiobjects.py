"""A real API server's objects as the sandbox's resync controllers read them (`ObjectSource`): every kind they
watch is listed and watched on a thread of its own and kept in memory, `read_list` answers from that copy, and
`update(..., status=True)` queues the status for a writer task (a merge patch of the status subresource, the
latest status per object, one write at a time, so an older status never lands after a newer one): a
controller's pass never waits on the network. A status is read back from the watch, not assumed written; a
write that failed is made again by the pass the next change causes. This is how the sandbox's Gateway
controller runs beside a real control plane (sandbox/realkube/gateway.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sandbox.listwatch import SYNC, list_then_watch

__all__ = ["ApiObjects", "Resource"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]
SYNC_WITHIN_S = 60.0


@dataclass(frozen=True)
class Resource:
    api_version: str
    kind: str
    plural: str

    @property
    def key(self) -> tuple[str, str]:
        return self.api_version, self.kind

    @property
    def group_version(self) -> tuple[str, str]:
        group, _, version = self.api_version.rpartition("/")
        return group, version


class ApiObjects:
    def __init__(self, api: k8s.ApiClient, resources: Sequence[Resource]) -> None:
        self.api = api
        self.resources = {resource.key: resource for resource in resources}
        self._objects: dict[tuple[str, str], dict[str, Obj]] = {key: {} for key in self.resources}
        self._subscribers: dict[tuple[str, str], set[asyncio.Queue[str]]] = {k: set() for k in self.resources}
        self._synced = {key: asyncio.Event() for key in self.resources}
        self._stop = threading.Event()
        self._pending: dict[tuple[Resource, str, str], Obj] = {}
        self._to_write = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Starts the readers and returns once every kind has been listed once (a controller that ran before
        would take a kind not read yet for a kind with no objects)."""
        loop = asyncio.get_running_loop()

        def deliver(kind: str, event: str, obj: Obj) -> None:
            loop.call_soon_threadsafe(self._apply, kind, event, obj)

        for key, resource in self.resources.items():
            reader = (f"{key[0]}/{key[1]}", self._list_call(resource), deliver, self._stop)
            threading.Thread(target=list_then_watch, args=reader, name=f"watch-{key[1]}", daemon=True).start()
        self._writer = asyncio.ensure_future(self._write_statuses())
        await asyncio.wait_for(
            asyncio.gather(*(synced.wait() for synced in self._synced.values())), SYNC_WITHIN_S
        )

    async def close(self) -> None:
        self._stop.set()
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)

    # ---- ObjectSource ------------------------------------------------------------------------------------

    def read_list(self, api_version: str, kind: str) -> list[Obj]:
        return list(self._objects[(api_version, kind)].values())

    async def watch(self, api_version: str, kind: str) -> AsyncIterator[str]:
        """One item per change of the kind (its event type); the first comes at once, for what is there."""
        queue: asyncio.Queue[str] = asyncio.Queue()
        queue.put_nowait(SYNC)
        subscribers = self._subscribers[(api_version, kind)]
        subscribers.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            subscribers.discard(queue)

    def update(self, api_version: str, kind: str, obj: Obj, *, status: bool = False) -> Obj:
        if not status:
            raise NotImplementedError("beside a real API server the controllers write statuses only")
        metadata = obj["metadata"]
        key = (self.resources[(api_version, kind)], str(metadata["namespace"]), str(metadata["name"]))
        self._pending[key] = obj["status"]
        self._to_write.set()
        return obj

    # ---- reading and writing -----------------------------------------------------------------------------

    def _list_call(self, resource: Resource) -> Callable[..., Any]:
        core, discovery = k8s.CoreV1Api(self.api), k8s.DiscoveryV1Api(self.api)
        calls: dict[tuple[str, str], Callable[..., Any]] = {
            ("v1", "Service"): core.list_service_for_all_namespaces,
            ("v1", "Namespace"): core.list_namespace,
            ("discovery.k8s.io/v1", "EndpointSlice"): discovery.list_endpoint_slice_for_all_namespaces,
        }
        if resource.key in calls:
            return calls[resource.key]
        custom = k8s.CustomObjectsApi(self.api)
        group, version = resource.group_version

        def list_custom(**options: Any) -> Any:
            return custom.list_cluster_custom_object(group, version, resource.plural, **options)

        return list_custom

    def _apply(self, kind: str, event: str, obj: Obj) -> None:
        api_version, _, name = kind.rpartition("/")
        key = (api_version, name)
        known = self._objects[key]
        if event == SYNC:
            known.clear()
            known.update({item["metadata"]["uid"]: item for item in obj.get("items") or []})
            self._synced[key].set()
        elif event == "DELETED":
            known.pop(obj["metadata"]["uid"], None)
        else:
            known[obj["metadata"]["uid"]] = obj
        for queue in self._subscribers[key]:
            queue.put_nowait(event)

    async def _write_statuses(self) -> None:
        while True:
            await self._to_write.wait()
            self._to_write.clear()
            while self._pending:
                key = next(iter(self._pending))
                status = self._pending.pop(key)
                await asyncio.to_thread(self._patch_status, *key, status)

    def _patch_status(self, resource: Resource, namespace: str, name: str, status: Obj) -> None:
        group, version = resource.group_version
        try:
            k8s.CustomObjectsApi(self.api).patch_namespaced_custom_object_status(
                group, version, namespace, resource.plural, name, {"status": status}
            )
        except Exception as error:  # the API server may be restarting: the next pass writes it again
            if not (isinstance(error, ApiException) and error.status == 404):  # 404: deleted meanwhile
                log.warning("status of %s %s/%s not written: %s", resource.kind, namespace, name, error)
