"""Heartbeats sent by a task of their own while an activity's block runs: a wait on a watch that may stay
silent for hours, an observer round that signals thousands of workflows. The work never holds a beat back,
so the heartbeat timeout finds only a worker that is gone, never a busy one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Final, Self

from temporalio import activity

DEFAULT_HEARTBEAT_SECONDS: Final = 10.0


def _third_of_heartbeat_timeout(cap_s: float | None) -> float:
    timeout = activity.info().heartbeat_timeout
    if timeout is None or timeout.total_seconds() <= 0:
        return DEFAULT_HEARTBEAT_SECONDS
    third = timeout.total_seconds() / 3
    return max(0.05, third if cap_s is None else min(cap_s, third))


def heartbeat_interval() -> float:
    """A third of the activity's heartbeat timeout, at most DEFAULT_HEARTBEAT_SECONDS (the SDK throttles to
    80 % of the timeout anyway)."""
    return _third_of_heartbeat_timeout(DEFAULT_HEARTBEAT_SECONDS)


def quiet_heartbeat_interval() -> float:
    """The heartbeat period of a wait kept for days (IO.QUIET_WATCH: the Serve health wait, the admission's
    wait for closed runs): a third of its heartbeat timeout, uncapped (a minute for 3 min), since each
    heartbeat that reaches the server is a billable action. What it watches it still polls at its own
    interval."""
    return _third_of_heartbeat_timeout(None)


class Heartbeater:
    """Heartbeats `details` (the latest view; none while it is None) every `interval()` seconds from a
    background task while the block runs. `first_beat_at_once` False: the first beat one period in."""

    def __init__(
        self,
        details: Any = None,
        interval: Callable[[], float] = heartbeat_interval,
        *,
        first_beat_at_once: bool = True,
    ) -> None:
        self.details = details
        self._interval = interval
        self._first_beat_at_once = first_beat_at_once
        self._task: asyncio.Task[None] | None = None

    async def _beat(self) -> None:
        interval = self._interval()
        if not self._first_beat_at_once:
            await asyncio.sleep(interval)
        while True:
            activity.heartbeat(*([] if self.details is None else [self.details]))
            await asyncio.sleep(interval)

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
