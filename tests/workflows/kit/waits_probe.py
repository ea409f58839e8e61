"""A tiny workflow that drives `workflows.kit.waits.Waits` through one scenario and reports every race.

The waits are plain durable sleeps ending with a value, so the time-skipping server decides when each one
finishes; `at` is seconds since the run started (workflow time)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.kit.waits import TIMER, Raced, Waits

WATCHES = "watches"
CHANGED = "changed"
TIMER_REARMED = "timer"


async def _after(seconds: float, value: str) -> str:
    await workflow.sleep(seconds)
    return value


@workflow.defn(name="test-waits-probe")
class WaitsProbe:
    def __init__(self) -> None:
        self._started = workflow.now()
        self._waits = Waits()
        self._seen: list[dict[str, Any]] = []

    def _record(self, raced: Raced, keys: tuple[str, ...]) -> None:
        self._seen.append(
            {
                "finished": {str(done.key): done.value() for done in raced.finished},
                "changed": raced.changed,
                "at": (workflow.now() - self._started).total_seconds(),
                "running": [key for key in keys if self._waits.running(key)],
            }
        )

    @workflow.run
    async def run(self, scenario: str) -> list[dict[str, Any]]:
        waits = self._waits
        if scenario == WATCHES:
            waits.start("a", lambda: _after(10, "A"))
            waits.start("b", lambda: _after(100, "B"))
            self._record(await waits.race(lambda: False), ("a", "b"))
            waits.start("b", lambda: _after(100, "B"))  # the next pass asks again: the one in flight stays
            self._record(await waits.race(lambda: False), ("a", "b"))
        elif scenario == CHANGED:
            waits.start("a", lambda: _after(1000, "A"))
            flag: list[bool] = []

            async def change_later() -> None:
                await workflow.sleep(5)
                flag.append(True)

            changer = asyncio.ensure_future(change_later())  # as a handler changing the desired state
            self._record(await waits.race(lambda: bool(flag)), ("a",))
            await changer
        elif scenario == TIMER_REARMED:
            # Each arm_timer below runs in a workflow task of its own (a wait finishing wakes the workflow):
            # within one task the SDK folds a timer started and cancelled into no command at all.
            def at(seconds: int) -> datetime:
                return self._started + timedelta(seconds=seconds)

            waits.arm_timer(at(seconds=60), "first")
            waits.start("w", lambda: _after(30, "W"))
            self._record(await waits.race(lambda: False), (TIMER, "w"))
            waits.arm_timer(at(seconds=60), "first again")  # same instant: the running timer stays
            self._record(await waits.race(lambda: False), (TIMER, "w"))
            waits.arm_timer(at(seconds=120), "later")
            waits.start("w", lambda: _after(10, "W"))
            self._record(await waits.race(lambda: False), (TIMER, "w"))
            waits.arm_timer(at(seconds=90), "sooner")  # a new instant: cancelled and started again
            self._record(await waits.race(lambda: False), (TIMER, "w"))
        await waits.stop()
        return self._seen
