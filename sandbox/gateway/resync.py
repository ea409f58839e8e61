"""What the Gateway controller is made of besides Gateway API's rules: a level-triggered resync loop over a
source of objects (a real API server's, through sandbox/realkube/apiobjects.py), and binding a listener that
another process may hold."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import AsyncIterator
from typing import Any, Generic, Protocol, TypeVar

from sandbox.proxy import TcpForwarder, WeightedHttpProxy

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)
_RETRY_INTERVAL_S = 1.0


class ObjectSource(Protocol):
    """What a resync controller reads and writes: a real API server's objects, as
    sandbox/realkube/apiobjects.py serves them, or a test's objects in memory."""

    def read_list(self, api_version: str, kind: str) -> list[Obj]: ...

    def watch(self, api_version: str, kind: str) -> AsyncIterator[Any]: ...

    def update(self, api_version: str, kind: str, obj: Obj, *, status: bool = False) -> Obj: ...


SourceT = TypeVar("SourceT", bound=ObjectSource)


class ResyncController(Generic[SourceT]):
    """Level-triggered controller: any event of a watched kind marks the world dirty, and one loop
    reconciles everything from the source. Bursts of events coalesce into a single pass."""

    watched: tuple[tuple[str, str], ...] = ()  # (apiVersion, kind)

    def __init__(self, store: SourceT) -> None:
        self.store = store
        self._dirty = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.retry_soon = False  # set by reconcile() when something (a bind) should be retried

    async def start(self) -> None:
        if self._tasks:
            return
        self._dirty.set()
        self._tasks = [asyncio.create_task(self._watch(av, kind)) for av, kind in self.watched]
        self._tasks.append(asyncio.create_task(self._loop()))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.shutdown()

    async def reconcile(self) -> None:
        raise NotImplementedError

    async def shutdown(self) -> None:
        """Release what reconcile() acquired (listeners, addresses)."""

    def request_resync(self) -> None:
        self._dirty.set()

    async def _watch(self, api_version: str, kind: str) -> None:
        # The source's watch starts with the current objects and ends only when the source closes.
        async for _event in self.store.watch(api_version, kind):
            self._dirty.set()

    async def _loop(self) -> None:
        while True:
            if self.retry_soon:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._dirty.wait(), _RETRY_INTERVAL_S)
            else:
                await self._dirty.wait()
            self._dirty.clear()
            self.retry_soon = False
            try:
                await self.reconcile()
            except Exception:
                log.exception("%s: reconcile failed; retrying", type(self).__name__)
                self.retry_soon = True


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace") or "default", meta["name"]


def is_headless(service: Obj) -> bool:
    return (service.get("spec") or {}).get("clusterIP") in (None, "", "None")


async def start_listener(listener: TcpForwarder | WeightedHttpProxy) -> bool:
    """Binds the listener; False when the address is taken right now (the caller retries later)."""
    try:
        await listener.start(free_port_if_unprivileged=True)
        return True
    except OSError as error:
        if error.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
            raise
        log.warning("cannot bind %s:%s (%s); will retry", listener.listen_host, listener.port, error)
        return False
