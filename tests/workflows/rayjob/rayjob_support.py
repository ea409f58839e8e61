"""What the RayJob workflow tests on the fake world share: running a RayJob to its end on a worker of the
world's activities, and swapping some of those activities for a test's own fakes."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import start
from raypilot.testing.rayjob_world import FakeWorld

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]


async def completed_run(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: FakeWorld, manifest: dict[str, Any]
) -> tuple[WorkflowHandle[Any, Any], dict[str, Any]]:
    """Runs the RayJob of `manifest` on a worker of the world's activities until its workflow returns; the
    handle (its history and memo stay readable) and the result."""
    async with fake_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        result: dict[str, Any] = await handle.result()
    return handle, result


def activity_name(fn: Callable[..., Any]) -> str:
    name = activity._Definition.must_from_callable(fn).name
    assert name is not None, "a dynamic activity has no name to replace"
    return name


def with_fakes(world: FakeWorld, *fakes: Callable[..., Any]) -> list[Callable[..., Any]]:
    """The world's activities with `fakes` in place of those of the same names."""
    replaced = {activity_name(fake) for fake in fakes}
    return [*(fn for fn in world.activities() if activity_name(fn) not in replaced), *fakes]
