"""The controller's reconcilers: objects queued together are reconciled side by side (a slow start holds no
other object), one object never by two reconcilers at once, and a change seen while it is reconciled brings
one more reconcile after it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from models.features import FeatureGates
from raypilot.controller.decide import Action
from raypilot.controller.loop import Controller, Key


class SlowReconciles:
    """Stands in for `reconcile_key`: each reconcile waits until released; records the keys in progress."""

    def __init__(self) -> None:
        self.in_progress: list[Key] = []
        self.most_at_once: dict[Key, int] = {}
        self.done: list[Key] = []
        self.release = asyncio.Event()
        self.changed = asyncio.Condition()

    async def __call__(self, key: Key) -> Action:
        async with self.changed:
            self.in_progress.append(key)
            self.most_at_once[key] = max(self.most_at_once.get(key, 0), self.in_progress.count(key))
            self.changed.notify_all()
        await self.release.wait()
        async with self.changed:
            self.in_progress.remove(key)
            self.done.append(key)
            self.changed.notify_all()
        return Action.NOTHING

    async def until(self, holds: Callable[[], bool]) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(holds), 5)


@contextlib.asynccontextmanager
async def reconciling(reconciles: SlowReconciles) -> AsyncIterator[Controller]:
    controller = Controller(kube=None, temporal=None, gates=FeatureGates(), status_interval=1.0)  # type: ignore[arg-type]
    controller.reconcile_key = reconciles  # type: ignore[method-assign]
    tasks = controller.start_reconcilers()
    try:
        yield controller
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def key(name: str) -> Key:
    return ("RayJob", "ns", name)


async def test_objects_queued_together_are_reconciled_side_by_side() -> None:
    reconciles = SlowReconciles()
    async with reconciling(reconciles) as controller:
        for name in ("a", "b", "c"):
            controller.enqueue(key(name))
        await reconciles.until(lambda: len(reconciles.in_progress) == 3)  # none waits for another's end
        reconciles.release.set()
        await reconciles.until(lambda: len(reconciles.done) == 3)
    assert sorted(reconciles.done) == [key("a"), key("b"), key("c")]


async def test_a_change_during_a_reconcile_is_reconciled_once_after_it_never_beside_it() -> None:
    reconciles = SlowReconciles()
    async with reconciling(reconciles) as controller:
        controller.enqueue(key("a"))
        await reconciles.until(lambda: reconciles.in_progress == [key("a")])
        for _ in range(3):  # three watch events while the object is reconciled
            controller.enqueue(key("a"))
        # Not queued (no idle reconciler can take it): held for after the reconcile in progress, once.
        assert (controller.queue.qsize(), controller.again) == (0, {key("a")})
        reconciles.release.set()
        await reconciles.until(lambda: len(reconciles.done) == 2)
        assert reconciles.done == [key("a"), key("a")]
        assert (controller.queue.qsize(), controller.queued, controller.again) == (0, set(), set())
    assert reconciles.most_at_once == {key("a"): 1}
