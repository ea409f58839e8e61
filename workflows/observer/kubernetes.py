"""KubernetesObserverWorkflow: the observer of one namespace's RayClusters, Jobs and head Pods, started by the
first workflow that registers an interest in one of them (signal-with-start by a fixed id).

It owns the watch book and keeps the one observer activity (`k8s_observer.observe_namespace`) running while
any watch exists; the activity reads the book with the `watches` query and signals the workflows. With no
watch left for `IDLE` it completes (a later watch starts a new run); a long history continues as new with the
book. The loop, the restart when a worker starts and the other handlers are the Ray job observer's
(workflows/observer/book_observer.py).
"""

from __future__ import annotations

from typing import ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wire import stubs
    from wire.kubernetes_observer import (
        KUBE_OBSERVER_WORKFLOW,
        KUBE_WATCH_SIGNAL,
        ObjectWatch,
        ObjectWatchBook,
        ObserveKubernetes,
    )
    from wire.packing import unpack

from workflows.kit.calls import IO, start
from workflows.observer.book_observer import BookObserver
from workflows.observer.loop import ObserverActivity


@workflow.defn(name=KUBE_OBSERVER_WORKFLOW)
class KubernetesObserverWorkflow(BookObserver[ObjectWatch]):
    WATCHES: ClassVar = dict[str, ObjectWatch]

    @workflow.init
    def __init__(self, namespace: str, packed_watches: str = "") -> None:
        # A run continued as new gets the watches packed.
        self.book = (
            ObjectWatchBook.of(unpack(packed_watches, self.WATCHES)) if packed_watches else ObjectWatchBook()
        )

        def observe(epoch_ms: int) -> workflow.ActivityHandle[None]:
            request = ObserveKubernetes(namespace, workflow.info().workflow_id, epoch_ms)
            return start(stubs.observe_namespace, request, IO.OBSERVE, summary="observe Kubernetes objects")

        self.observer = ObserverActivity(observe, "Kubernetes observer")

    @workflow.signal(name=KUBE_WATCH_SIGNAL)
    def watch(self, request: ObjectWatch) -> None:
        self.book.watch(request)

    @workflow.run
    async def run(self, namespace: str, packed_watches: str = "") -> None:
        await self.observe(namespace)
