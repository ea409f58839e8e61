"""Waiting on several things at once without paying for it twice: the one wait kit of both workflows.

A `Waits` holds the in-flight waits of a workflow (heartbeating wait activities, or any awaitable), each
under a key, and at most one durable timer. `race` returns as soon as one of them finishes or a handler
changed the desired state; the others keep running for the next race, so a waiting workflow costs no history
events while nothing changes (no timer restarted, no wait re-scheduled). A wait is cancelled only when it is
no longer wanted (`cancel`, `keep_only`); `stop` cancels them all, and confirms the cancellations when the
workflow asks it to.

A wait is "tell me when X about object Y changes": today a wait activity (`workflows.kit.calls.start` or a
coroutine of `call`); an observer that signals the workflow can stand behind the same key later, as a
future that a handler resolves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Hashable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from temporalio import workflow

TIMER: Final = "deadline"


@dataclass(frozen=True)
class Finished:
    """A wait that ended: its key and its result, or the exception it ended with."""

    key: Hashable
    result: Any = None
    error: BaseException | None = None

    def value(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


@dataclass(frozen=True)
class Raced:
    """What ended a race: the waits that finished (the timer as `TIMER`), and whether the change condition
    held."""

    finished: list[Finished] = field(default_factory=list)
    changed: bool = False


class Waits:
    def __init__(self, *, zero_timer_when_due: bool = False) -> None:
        """`zero_timer_when_due`: a timer armed for an instant already passed still starts a zero-length
        durable timer (the RayService workflow always did, and its histories hold those timers); without
        it such a timer fires at once without a command (the RayJob workflow's histories)."""
        self._tasks: dict[Hashable, asyncio.Future[Any]] = {}
        self._timer_at: datetime | None = None
        self._zero_timer_when_due = zero_timer_when_due
        self._cancelling: list[asyncio.Future[Any]] = []

    def running(self, key: Hashable) -> bool:
        return key in self._tasks

    def start(self, key: Hashable, wait: Callable[[], Awaitable[Any]]) -> None:
        """Starts `wait()` under `key` unless a wait of that key is in flight already."""
        if key not in self._tasks:
            self._tasks[key] = asyncio.ensure_future(wait())

    def cancel(self, key: Hashable) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()
            # A cancelled activity ends with an ActivityError nobody awaits; retrieve it so it is not logged.
            task.add_done_callback(_retrieve)
            if key != TIMER:
                self._cancelling = [*(pending for pending in self._cancelling if not pending.done()), task]
        if key == TIMER:
            self._timer_at = None

    def keep_only(self, keys: Collection[Hashable]) -> None:
        """Cancels every wait whose key is not in `keys` (the timer stays)."""
        for key in list(self._tasks):
            if key != TIMER and key not in keys:
                self.cancel(key)

    def cancel_all(self) -> None:
        for key in list(self._tasks):
            self.cancel(key)

    async def stop(self, *, confirm: bool = True) -> None:
        """Cancels every wait and the timer; with `confirm`, waits until the cancellations are recorded. A
        cancellation is recorded when the wait's worker acts on it, or, for a wait lost with its worker, at
        the wait's heartbeat timeout."""
        self.cancel_all()
        cancelling, self._cancelling = self._cancelling, []
        if confirm:
            await asyncio.gather(*cancelling, return_exceptions=True)

    def arm_timer(self, at: datetime | None, summary: str) -> None:
        """One durable timer for `at` (None: none). Re-armed only when the instant changes."""
        if at == self._timer_at and (at is None or TIMER in self._tasks):
            return
        self.cancel(TIMER)
        if at is None:
            return
        delay = (at - workflow.now()).total_seconds()
        self._timer_at = at
        if delay <= 0 and not self._zero_timer_when_due:
            self._tasks[TIMER] = asyncio.ensure_future(_already(at))
        else:
            self._tasks[TIMER] = asyncio.ensure_future(workflow.sleep(max(delay, 0), summary=summary))

    async def race(self, changed: Callable[[], bool]) -> Raced:
        """Waits until a wait or the timer finishes or `changed()` holds."""
        condition = asyncio.ensure_future(workflow.wait_condition(changed))
        try:
            await workflow.wait([*self._tasks.values(), condition], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not condition.done():
                condition.cancel()
        finished: list[Finished] = []
        for key, task in list(self._tasks.items()):
            if not task.done():
                continue
            del self._tasks[key]
            if key == TIMER:
                self._timer_at = None
            if task.cancelled():
                finished.append(Finished(key, error=asyncio.CancelledError()))
            elif task.exception() is not None:
                finished.append(Finished(key, error=task.exception()))
            else:
                finished.append(Finished(key, result=task.result()))
        return Raced(finished, changed=condition.done() and not condition.cancelled())


async def _already(at: datetime) -> datetime:
    return at


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
