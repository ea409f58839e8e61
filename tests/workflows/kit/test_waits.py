"""`workflows.kit.waits.Waits` on the time-skipping server, through the tiny workflow of waits_probe.py: a
finished wait wakes the race while the others keep running, `changed()` wakes it with nothing finished, and
the one durable timer is started again only when its instant changes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tests.workflows.kit.waits_probe import CHANGED, TIMER_REARMED, WATCHES, WaitsProbe
from workflows.kit.waits import TIMER

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
LATE = 3  # seconds a workflow task may start after its wake-up on a busy machine (the server clock runs on)


async def _probe(
    env: WorkflowEnvironment, fake_worker: FakeWorker, scenario: str
) -> tuple[list[dict[str, Any]], WorkflowHandle[Any, Any]]:
    async with fake_worker(env.client, workflows=[WaitsProbe]) as task_queue:
        handle = await env.client.start_workflow(
            WaitsProbe.run, scenario, id=f"waits-{scenario}-{uuid.uuid4().hex[:6]}", task_queue=task_queue
        )
        # A probe whose workflow task fails would retry forever: fail the test instead.
        return await asyncio.wait_for(handle.result(), timeout=60), handle


async def _event_count(handle: WorkflowHandle[Any, Any], event_type: int) -> int:
    return sum([1 async for event in handle.fetch_history_events() if event.event_type == event_type])


async def test_a_finished_wait_wakes_the_race_and_the_others_keep_running(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    first, second = (await _probe(time_skipping_env, fake_worker, WATCHES))[0]
    assert first["finished"] == {"a": "A"}
    assert first["changed"] is False
    assert first["at"] == pytest.approx(10, abs=LATE)
    assert first["running"] == ["b"]
    # b was restarted neither by the race nor by the next start: it ends 100 s after the start, not 110.
    assert second["finished"] == {"b": "B"}
    assert second["at"] == pytest.approx(100, abs=LATE)


async def test_changed_wakes_the_race_with_nothing_finished(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    (raced,), _ = await _probe(time_skipping_env, fake_worker, CHANGED)
    assert raced == {"finished": {}, "changed": True, "at": pytest.approx(5, abs=LATE), "running": ["a"]}


async def test_the_timer_is_started_again_only_when_its_instant_changes(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    races, handle = await _probe(time_skipping_env, fake_worker, TIMER_REARMED)
    assert [list(raced["finished"]) for raced in races] == [["w"], [TIMER], ["w"], [TIMER]]
    # The timer armed again for the same instant at 30 s is still the first one (60 s); the one armed for
    # 120 s at 70 s gives way to 90 s.
    assert [raced["at"] for raced in races] == pytest.approx([30, 60, 70, 90], abs=LATE)
    # Timers: 60 s, w at 30 s, 120 s, w at 70 s, 90 s; only the 120 s one cancelled.
    assert await _event_count(handle, EventType.EVENT_TYPE_TIMER_STARTED) == 5
    assert await _event_count(handle, EventType.EVENT_TYPE_TIMER_CANCELED) == 1
