"""The loop both observer workflows run (the Ray job observer and the Kubernetes observer): keep one observer
activity running while the book has watches, restart it at once when a worker starts, and tell the caller
when to stop (idle) or continue as new (long history, or a new build of raypilot to move to).

A `worker-started` signal (sent by every worker when it starts, `activities.observer.restart_observers`)
restarts the activity under a newer epoch: after a kill -9 its attempt would otherwise be retried only when
its heartbeat times out (20 s, which is what moves it when a worker dies and none starts). The replaced
activity, if it still runs, sees the newer epoch in its
next `watches` query and stops.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Final

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from wire.observer import next_epoch_ms

from workflows.kit.builds import next_run_versioning, target_build_changed

# How long an observer with no watch stays (a RayJob's next attempt or a new job on the cluster soon after
# reuses it instead of starting a new run).
IDLE: Final = timedelta(minutes=2)
# Every watch and unwatch is a signal event: continue as new while the history is short. An observer is
# evicted from a busy worker's workflow cache by the RayJobs it serves, and each task then replays its whole
# history: at 10,000 events (10,000 RayJobs registering on one cluster) that replay outlasted the 10 s
# workflow task timeout again and again, and the observer stopped. Short runs also stay far under the
# server's limit of signals per execution (10,000 by default), past which registrations are refused. The
# watches are carried packed, so continuing as new is cheap.
HISTORY_LIMIT: Final = 2_000
RESTART_PAUSE: Final = timedelta(seconds=30)

StartActivity = Callable[[int], workflow.ActivityHandle[None]]


class ObserverActivity:
    """The observer's one activity: started by `start_one(epoch_ms)`; `epoch_ms` is the running one's (the
    first part of every view's version), so a later activity's views order after an earlier one's."""

    def __init__(self, start_one: StartActivity, label: str) -> None:
        self.start_one = start_one
        self.label = label
        self.epoch_ms = 0
        self.restart_asked = False

    def start(self) -> workflow.ActivityHandle[None]:
        self.epoch_ms = next_epoch_ms(int(workflow.now().timestamp() * 1000), self.epoch_ms)
        return self.start_one(self.epoch_ms)


async def keep_observing(observer: ObserverActivity, has_watches: Callable[[], bool]) -> None:
    """Runs the observer activity until the book has had no watch for `IDLE` or the history is long (the
    caller then continues as new when watches remain)."""
    observing = observer.start()

    def needs_attention() -> bool:
        return not has_watches() or history_long() or observing.done() or observer.restart_asked

    while not history_long():
        await workflow.wait_condition(needs_attention)
        if observer.restart_asked and not observing.done():
            observer.restart_asked = False
            observing.cancel()
            observing.add_done_callback(_retrieve)
            observing = observer.start()
            continue
        if observing.done():
            # Only a non-retryable failure ends the activity (e.g. a worker without a Temporal client): the
            # watches stay, and the activity starts again after a pause.
            try:
                await observing
            except ActivityError as error:
                workflow.logger.warning("%s activity failed: %s", observer.label, error.cause or error)
            await workflow.sleep(RESTART_PAUSE)
            observing = observer.start()
            continue
        if has_watches():
            continue
        try:
            await workflow.wait_condition(has_watches, timeout=IDLE)
        except TimeoutError:
            break
    observing.cancel()
    observing.add_done_callback(_retrieve)  # the run ends without awaiting it


async def observe_then_continue(
    observer: ObserverActivity,
    namespace: str,
    watches: Callable[[], dict[str, Any]],
    packed: Callable[[], str],
) -> None:
    """An observer workflow's run: observe while there are watches; once the run should end with watches
    left (a long history, a new build), continue as new with them packed (`packed`)."""
    await keep_observing(observer, lambda: bool(watches()))
    if watches():
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            args=[namespace, packed()], initial_versioning_behavior=next_run_versioning()
        )


def history_long() -> bool:
    """Time to continue as new: a long history, or a new build of raypilot to move to (kit/builds.py)."""
    info = workflow.info()
    too_long = info.is_continue_as_new_suggested() or info.get_current_history_length() > HISTORY_LIMIT
    return too_long or target_build_changed()


def _retrieve(replaced: workflow.ActivityHandle[None]) -> None:
    """A replaced or left activity ends cancelled (or failed) and nobody awaits it: take its outcome so that
    it is not logged as never retrieved."""
    if not replaced.cancelled():
        replaced.exception()
