"""The controllers' keyed work queue: coalescing, no overlapping passes per key, requeue, forget."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from sandbox.controllers.raycluster_workqueue import FORGET, KeyedWorkQueue, ReconcileResult


async def wait_for(predicate: Callable[[], bool], within: float = 2.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)


async def test_events_during_a_pass_coalesce_and_passes_never_overlap() -> None:
    running: set[str] = set()
    passes: list[str] = []
    release = asyncio.Event()

    async def reconcile(key: str) -> ReconcileResult:
        assert key not in running, "two passes of one key overlapped"
        running.add(key)
        passes.append(key)
        await release.wait()
        running.discard(key)
        return None

    queue: KeyedWorkQueue[str] = KeyedWorkQueue("test", reconcile)
    queue.enqueue("a")
    queue.enqueue("b")
    await wait_for(lambda: running == {"a", "b"})
    for _ in range(5):
        queue.enqueue("a")
    release.set()
    await wait_for(lambda: passes.count("a") == 2 and not running)
    await asyncio.sleep(0.05)
    assert passes.count("a") == 2
    assert passes.count("b") == 1
    await queue.stop()


async def test_requeue_after_delay_and_forget() -> None:
    calls: list[float] = []

    async def reconcile(key: str) -> ReconcileResult:
        calls.append(time.monotonic())
        return 0.05 if len(calls) < 3 else FORGET

    queue: KeyedWorkQueue[str] = KeyedWorkQueue("test", reconcile)
    queue.enqueue("k")
    await wait_for(lambda: len(calls) == 3 and queue.keys == [])
    assert calls[1] - calls[0] >= 0.045
    await queue.stop()


async def test_a_failing_pass_is_retried() -> None:
    calls = 0

    async def reconcile(key: str) -> ReconcileResult:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        return FORGET

    queue: KeyedWorkQueue[str] = KeyedWorkQueue("test", reconcile)
    queue.enqueue("k")
    await wait_for(lambda: calls == 2, within=3.0)
    await queue.stop()
