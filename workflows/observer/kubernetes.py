"""KubernetesObserverWorkflow: the observer of one namespace's RayClusters, Jobs and head Pods, started by the
first workflow that registers an interest in one of them (signal-with-start by a fixed id).

It owns the watch book and keeps the one observer activity (`k8s_observer.observe_namespace`) running while
any watch exists; the activity reads the book with the `watches` query and signals the workflows. With no
watch left for `IDLE` it completes (a later watch starts a new run); a long history continues as new with the
book. The loop, and the restart when a worker starts, are the Ray job observer's (workflows/observer/loop.py).
"""

from __future__ import annotations

import dataclasses

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wire import stubs
    from wire.kubernetes_observer import (
        KUBE_OBSERVER_WORKFLOW,
        KUBE_UNWATCH_SIGNAL,
        KUBE_WATCH_SIGNAL,
        KUBE_WATCHES_QUERY,
        ObjectWatch,
        ObjectWatchBook,
        ObjectWatchChanges,
        ObserveKubernetes,
        packed_object_changes,
    )
    from wire.observer import WORKER_STARTED_SIGNAL
    from wire.packing import pack, unpack

from workflows.kit.calls import IO, start
from workflows.observer.loop import ObserverActivity, observe_then_continue


@workflow.defn(name=KUBE_OBSERVER_WORKFLOW)
class KubernetesObserverWorkflow:
    @workflow.init
    def __init__(self, namespace: str, packed_watches: str = "") -> None:
        # A run continued as new gets the watches packed.
        self.book = (
            ObjectWatchBook.of(unpack(packed_watches, dict[str, ObjectWatch]))
            if packed_watches
            else ObjectWatchBook()
        )

        def observe(epoch_ms: int) -> workflow.ActivityHandle[None]:
            request = ObserveKubernetes(namespace, workflow.info().workflow_id, epoch_ms)
            return start(stubs.observe_namespace, request, IO.OBSERVE, summary="observe Kubernetes objects")

        self.observer = ObserverActivity(observe, "Kubernetes observer")

    @workflow.signal(name=KUBE_WATCH_SIGNAL)
    def watch(self, request: ObjectWatch) -> None:
        self.book.watch(request)

    @workflow.signal(name=KUBE_UNWATCH_SIGNAL)
    def unwatch(self, key: str) -> None:
        self.book.unwatch(key)

    @workflow.signal(name=WORKER_STARTED_SIGNAL)
    def worker_started(self, identity: str) -> None:
        self.observer.restart_asked = True

    @workflow.query(name=KUBE_WATCHES_QUERY)
    def watches(self, since: int) -> ObjectWatchChanges:
        changes = packed_object_changes(self.book.changes_since(since))
        return dataclasses.replace(changes, epoch_ms=self.observer.epoch_ms)

    @workflow.run
    async def run(self, namespace: str, packed_watches: str = "") -> None:
        await observe_then_continue(
            self.observer,
            namespace,
            lambda: self.book.watches,
            lambda: pack(self.book.watches, dict[str, ObjectWatch]),
        )
