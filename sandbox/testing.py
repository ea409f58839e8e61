"""Test helpers around the sandbox: waiting on conditions with a deadline, and running a whole sandbox."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class ConditionTimeout(AssertionError):
    """The awaited condition did not hold before the deadline."""


async def wait_until(
    probe: Callable[[], T | Awaitable[T | None] | None],
    *,
    within: float = 10.0,
    interval: float = 0.02,
    what: str = "condition",
) -> T:
    """Poll `probe` (sync or async) until it returns something truthy and return that; fail after `within`."""
    deadline = time.monotonic() + within
    last: object = None
    while True:
        outcome = probe()
        result = await outcome if isinstance(outcome, Awaitable) else outcome
        if result:
            return result
        last = result
        if time.monotonic() >= deadline:
            raise ConditionTimeout(f"{what} not reached within {within} s (last value: {last!r})")
        await asyncio.sleep(interval)


def poll_until(
    probe: Callable[[], T | None],
    *,
    within: float = 10.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """`wait_until` for synchronous callers (tests driving the sandbox from another thread)."""
    deadline = time.monotonic() + within
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise ConditionTimeout(f"{what} not reached within {within} s (last value: {result!r})")
        time.sleep(interval)
