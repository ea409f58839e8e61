"""RayJobObserverWorkflow: the observer of one namespace's Ray dashboards, started by the first RayJob that
waits on one of them.

It owns the watch book (which workflow waits for which submission id) and keeps the one observer activity
(`observer.observe_jobs`) running while any watch exists; the activity reads the book with the `watches`
query and signals the workflows. Signal-with-start by a fixed id makes starting it idempotent, and Temporal
hands the activity to one worker of the task queue: several workers share observers as any activity. With
no watch left for `IDLE` it completes (a later watch starts a new run); a long history continues as new with
the book. A `worker-started` signal (sent by every worker when it starts) restarts the activity at once:
after a worker was killed its attempt would otherwise be retried only when its heartbeat times out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from wire import stubs
    from wire.observer import (
        OBSERVER_WORKFLOW,
        UNWATCH_SIGNAL,
        WATCH_SIGNAL,
        WATCHES_QUERY,
        WORKER_STARTED_SIGNAL,
        JobWatch,
        ObserveJobs,
        WatchBook,
        WatchChanges,
        next_epoch_ms,
    )

from workflows.kit.calls import IO, start

# How long an observer with no watch stays (a RayJob's next attempt or a new job on the cluster soon after
# reuses it instead of starting a new run).
IDLE: Final = timedelta(minutes=2)
# Every watch and unwatch is a signal event: continue as new well before the history gets heavy.
HISTORY_LIMIT: Final = 10_000
RESTART_PAUSE: Final = timedelta(seconds=30)


@workflow.defn(name=OBSERVER_WORKFLOW)
class RayJobObserverWorkflow:
    @workflow.init
    def __init__(self, namespace: str, book: WatchBook | None = None) -> None:
        self.book = book if book is not None else WatchBook()
        # The epoch of the activity now running (its views' first version part); a new worker asks for a
        # new activity.
        self.epoch_ms = 0
        self.restart_asked = False

    @workflow.signal(name=WATCH_SIGNAL)
    def watch(self, request: JobWatch) -> None:
        self.book.watch(request)

    @workflow.signal(name=UNWATCH_SIGNAL)
    def unwatch(self, key: str) -> None:
        self.book.unwatch(key)

    @workflow.signal(name=WORKER_STARTED_SIGNAL)
    def worker_started(self, identity: str) -> None:
        self.restart_asked = True

    @workflow.query(name=WATCHES_QUERY)
    def watches(self, since: int) -> WatchChanges:
        return dataclasses.replace(self.book.changes_since(since), epoch_ms=self.epoch_ms)

    @workflow.run
    async def run(self, namespace: str, book: WatchBook | None = None) -> None:
        observing = self._observe(namespace)
        while not self._history_long():
            await workflow.wait_condition(self._needs_attention(observing))
            if self.restart_asked and not observing.done():
                # A worker started: if the activity's worker is the one that died, its attempt would wait
                # for its heartbeat timeout. A new activity (a new epoch) lists at once; the old one, if it
                # still runs, sees the new epoch at its next tick and stops.
                self.restart_asked = False
                observing.cancel()
                observing.add_done_callback(_retrieve)
                observing = self._observe(namespace)
                continue
            if observing.done():
                # Only a non-retryable failure ends the activity (e.g. a worker without a Temporal client):
                # the watches stay, and the activity starts again after a pause.
                try:
                    await observing
                except ActivityError as error:
                    workflow.logger.warning("observer activity failed: %s", error.cause or error)
                await workflow.sleep(RESTART_PAUSE)
                observing = self._observe(namespace)
                continue
            if self.book.watches:
                continue
            try:
                await workflow.wait_condition(lambda: bool(self.book.watches), timeout=IDLE)
            except TimeoutError:
                break
        observing.cancel()
        if self.book.watches:
            await workflow.wait_condition(workflow.all_handlers_finished)
            workflow.continue_as_new(args=[namespace, self.book])

    def _observe(self, namespace: str) -> workflow.ActivityHandle[None]:
        """Starts the observer activity; its epoch (the first part of every view's version) is now, so a
        later activity's views order after an earlier one's."""
        self.epoch_ms = next_epoch_ms(int(workflow.now().timestamp() * 1000), self.epoch_ms)
        request = ObserveJobs(namespace, workflow.info().workflow_id, self.epoch_ms)
        return start(stubs.observe_jobs, request, IO.OBSERVE, summary="observe Ray jobs")

    def _needs_attention(self, observing: workflow.ActivityHandle[None]) -> Callable[[], bool]:
        return lambda: not self.book.watches or self._history_long() or observing.done() or self.restart_asked

    def _history_long(self) -> bool:
        info = workflow.info()
        return info.is_continue_as_new_suggested() or info.get_current_history_length() > HISTORY_LIMIT


def _retrieve(replaced: workflow.ActivityHandle[None]) -> None:
    """A replaced activity ends cancelled (or failed) and nobody awaits it: take its outcome so that it is
    not logged as never retrieved."""
    if not replaced.cancelled():
        replaced.exception()
