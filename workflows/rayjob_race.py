"""Waiting on several things at once without paying for it twice.

A `Watches` holds the in-flight waits of a workflow (heartbeating wait activities and at most one deadline
timer), each under a key. `race` returns as soon as one of them finishes or a handler changed the desired
state; the others keep running for the next race, so a running job costs no history events while nothing
changes (no timer is restarted, no wait re-scheduled). A wait is cancelled only when it is no longer wanted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio import workflow

TIMER_KEY = "deadline"


@dataclass(frozen=True)
class Finished:
    """A watch that ended: its key and its result, or the exception it ended with."""

    key: str
    result: Any = None
    error: BaseException | None = None

    def value(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


class Watches:
    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._timer_at: datetime | None = None

    def running(self, key: str) -> bool:
        return key in self._tasks

    def start(self, key: str, wait: Callable[[], Awaitable[Any]]) -> None:
        """Starts `wait()` under `key` unless a watch of that key is in flight already."""
        if key not in self._tasks:
            self._tasks[key] = asyncio.ensure_future(wait())

    def cancel(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()
            # A cancelled activity ends with an ActivityError nobody awaits; retrieve it so it is not logged.
            task.add_done_callback(_retrieve)
        if key == TIMER_KEY:
            self._timer_at = None

    def cancel_all(self) -> None:
        for key in list(self._tasks):
            self.cancel(key)

    def arm_timer(self, at: datetime | None, summary: str) -> None:
        """One durable timer for `at` (None: none). Re-armed only when the instant changes."""
        if at == self._timer_at and (at is None or TIMER_KEY in self._tasks):
            return
        self.cancel(TIMER_KEY)
        if at is None:
            return
        delay = (at - workflow.now()).total_seconds()
        self._timer_at = at
        if delay <= 0:
            self._tasks[TIMER_KEY] = asyncio.ensure_future(_already(at))
        else:
            self._tasks[TIMER_KEY] = asyncio.ensure_future(workflow.sleep(delay, summary=summary))

    async def race(self, changed: Callable[[], bool]) -> list[Finished]:
        """Waits until a watch finishes or `changed()` holds; returns the watches that finished (empty when
        only `changed()` woke it)."""
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
            if key == TIMER_KEY:
                self._timer_at = None
            if task.cancelled():
                finished.append(Finished(key, error=asyncio.CancelledError()))
            elif task.exception() is not None:
                finished.append(Finished(key, error=task.exception()))
            else:
                finished.append(Finished(key, result=task.result()))
        return finished


async def _already(at: datetime) -> datetime:
    return at


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
