"""A keyed work queue for the sandbox controllers (used by the RayCluster and the Job controller).

Like controller-runtime's queue: a key marked dirty is reconciled soon; passes for one key never overlap (a
pass may take seconds, e.g. while a Ray head starts), while different keys proceed concurrently; events that
arrive during a pass coalesce into one more pass. A pass returns when to look again (seconds), `None` for
"only on the next event", or `FORGET` once the object is gone, which ends the key's task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from sandbox.store import ApiError, Store, WatchEvent

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class _Forget:
    def __repr__(self) -> str:
        return "FORGET"


FORGET: Final = _Forget()
ReconcileResult = float | None | _Forget
# A pass that raised is retried after this long, so a bug cannot spin the event loop.
ERROR_RETRY_S = 1.0


@dataclass
class _KeyState:
    dirty: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    timer: asyncio.TimerHandle | None = None
    timer_due: float = 0.0


class KeyedWorkQueue(Generic[K]):
    def __init__(self, name: str, reconcile: Callable[[K], Awaitable[ReconcileResult]]) -> None:
        self.name = name
        self._reconcile = reconcile
        self._keys: dict[K, _KeyState] = {}
        self._stopped = False

    def enqueue(self, key: K, delay: float = 0.0) -> None:
        """Mark `key` dirty now, or after `delay` seconds (an earlier pending wake-up wins)."""
        if self._stopped:
            return
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = _KeyState()
        if delay > 0:
            self._schedule(key, state, delay)
            return
        state.dirty.set()
        if state.task is None or state.task.done():
            loop = asyncio.get_running_loop()
            state.task = loop.create_task(self._run(key, state), name=f"{self.name}:{key}")

    def _schedule(self, key: K, state: _KeyState, delay: float) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        if state.timer is not None and not state.timer.cancelled() and state.timer_due <= due:
            return
        if state.timer is not None:
            state.timer.cancel()
        state.timer_due = due
        state.timer = loop.call_at(due, self._fire, key)

    def _fire(self, key: K) -> None:
        state = self._keys.get(key)
        if state is not None:
            state.timer = None
        self.enqueue(key)

    async def _run(self, key: K, state: _KeyState) -> None:
        while not self._stopped:
            await state.dirty.wait()
            state.dirty.clear()
            try:
                result = await self._reconcile(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: reconcile of %s failed; retrying", self.name, key)
                result = ERROR_RETRY_S
            if isinstance(result, _Forget):
                if state.dirty.is_set():
                    continue
                if state.timer is not None:
                    state.timer.cancel()
                if self._keys.get(key) is state:
                    del self._keys[key]
                return
            if result is not None:
                self._schedule(key, state, max(result, 0.0))

    @property
    def keys(self) -> list[K]:
        return list(self._keys)

    async def stop(self) -> None:
        """Cancels every pass in progress and every pending wake-up."""
        self._stopped = True
        tasks = []
        for state in self._keys.values():
            if state.timer is not None:
                state.timer.cancel()
            if state.task is not None and not state.task.done():
                state.task.cancel()
                tasks.append(state.task)
        self._keys.clear()
        await asyncio.gather(*tasks, return_exceptions=True)


async def follow_changes(
    store: Store,
    api_version: str,
    kind: str,
    on_event: Callable[[WatchEvent], None],
    *,
    label_selector: str | None = None,
) -> None:
    """Feed every change of one kind to `on_event` until the store closes.

    A watch opened without a resourceVersion first replays every existing object as ADDED, so restarting it
    after a 410 Expired re-announces everything; controllers' passes are idempotent, so that is harmless.
    """
    while True:
        try:
            async for event in store.watch(api_version, kind, label_selector=label_selector):
                on_event(event)
            return
        except ApiError as exc:
            if exc.status != 410:
                raise
            log.info("watch of %s %s expired; re-listing", api_version, kind)
