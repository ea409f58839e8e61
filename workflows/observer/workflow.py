"""RayJobObserverWorkflow: the observer of one namespace's Ray dashboards, started by the first RayJob that
waits on one of them.

It owns the watch book (which workflow waits for which submission id) and keeps the one observer activity
(`observer.observe_jobs`) running while any watch exists; the activity reads the book with the `watches`
query and signals the workflows. Signal-with-start by a fixed id makes starting it idempotent, and Temporal
hands the activity to one worker of the task queue: several workers share observers as any activity. With
no watch left for `IDLE` it completes (a later watch starts a new run); a long history continues as new with
the book. The loop, and the restart when a worker starts, are shared with the Kubernetes observer
(workflows/observer/loop.py).
"""

from __future__ import annotations

import dataclasses

from temporalio import workflow

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
        packed_changes,
    )
    from wire.packing import pack, unpack

from workflows.kit.calls import IO, start
from workflows.observer.loop import ObserverActivity, observe_then_continue


@workflow.defn(name=OBSERVER_WORKFLOW)
class RayJobObserverWorkflow:
    @workflow.init
    def __init__(self, namespace: str, packed_watches: str = "") -> None:
        # A run continued as new gets the watches packed.
        self.book = (
            WatchBook.of(unpack(packed_watches, dict[str, JobWatch])) if packed_watches else WatchBook()
        )

        def observe(epoch_ms: int) -> workflow.ActivityHandle[None]:
            request = ObserveJobs(namespace, workflow.info().workflow_id, epoch_ms)
            return start(stubs.observe_jobs, request, IO.OBSERVE, summary="observe Ray jobs")

        self.observer = ObserverActivity(observe, "observer")

    @workflow.signal(name=WATCH_SIGNAL)
    def watch(self, request: JobWatch) -> None:
        self.book.watch(request)

    @workflow.signal(name=UNWATCH_SIGNAL)
    def unwatch(self, key: str) -> None:
        self.book.unwatch(key)

    @workflow.signal(name=WORKER_STARTED_SIGNAL)
    def worker_started(self, identity: str) -> None:
        self.observer.restart_asked = True

    @workflow.query(name=WATCHES_QUERY)
    def watches(self, since: int) -> WatchChanges:
        changes = packed_changes(self.book.changes_since(since))
        return dataclasses.replace(changes, epoch_ms=self.observer.epoch_ms)

    @workflow.run
    async def run(self, namespace: str, packed_watches: str = "") -> None:
        await observe_then_continue(
            self.observer,
            namespace,
            lambda: self.book.watches,
            lambda: pack(self.book.watches, dict[str, JobWatch]),
        )
