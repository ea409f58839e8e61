"""RayJobObserverWorkflow: the observer of one namespace's Ray dashboards, started by the first RayJob that
waits on one of them.

It owns the watch book (which workflow waits for which submission id) and keeps the one observer activity
(`observer.observe_jobs`) running while any watch exists; the activity reads the book with the `watches`
query and signals the workflows. Signal-with-start by a fixed id makes starting it idempotent, and Temporal
hands the activity to one worker of the task queue: several workers share observers as any activity. With
no watch left for `IDLE` it completes (a later watch starts a new run); a long history continues as new with
the book. The loop, the restart when a worker starts and the other handlers are shared with the Kubernetes
observer (workflows/observer/book_observer.py).
"""

from __future__ import annotations

from typing import ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wire import stubs
    from wire.observer import OBSERVER_WORKFLOW, WATCH_SIGNAL, JobWatch, ObserveJobs, WatchBook
    from wire.packing import unpack

from workflows.kit.calls import IO, start
from workflows.observer.book_observer import BookObserver
from workflows.observer.loop import ObserverActivity


@workflow.defn(name=OBSERVER_WORKFLOW)
class RayJobObserverWorkflow(BookObserver[JobWatch]):
    WATCHES: ClassVar = dict[str, JobWatch]

    @workflow.init
    def __init__(self, namespace: str, packed_watches: str = "") -> None:
        # A run continued as new gets the watches packed.
        self.book = WatchBook.of(unpack(packed_watches, self.WATCHES)) if packed_watches else WatchBook()

        def observe(epoch_ms: int) -> workflow.ActivityHandle[None]:
            request = ObserveJobs(namespace, workflow.info().workflow_id, epoch_ms)
            return start(stubs.observe_jobs, request, IO.OBSERVE, summary="observe Ray jobs")

        self.observer = ObserverActivity(observe, "observer")

    @workflow.signal(name=WATCH_SIGNAL)
    def watch(self, request: JobWatch) -> None:
        self.book.watch(request)

    @workflow.run
    async def run(self, namespace: str, packed_watches: str = "") -> None:
        await self.observe(namespace)
