"""KubernetesObserverWorkflow: the observer of one namespace's RayClusters, Jobs and head Pods, started by the
first workflow that registers an interest in one of them (signal-with-start by a fixed id).

It owns the watch book and keeps the one observer activity (`k8s_observer.observe_namespace`) running while
any watch exists; the activity reads the book with the `watches` query and signals the workflows. With no
watch left for `IDLE` it completes (a later watch starts a new run); a long history continues as new with the
book. The same shape as `RayJobObserverWorkflow` (workflows/observer/workflow.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.exceptions import ActivityError

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
    )

from workflows.kit.calls import IO, start

IDLE: Final = timedelta(minutes=2)
HISTORY_LIMIT: Final = 10_000
RESTART_PAUSE: Final = timedelta(seconds=30)


@workflow.defn(name=KUBE_OBSERVER_WORKFLOW)
class KubernetesObserverWorkflow:
    @workflow.init
    def __init__(self, namespace: str, book: ObjectWatchBook | None = None) -> None:
        self.book = book if book is not None else ObjectWatchBook()

    @workflow.signal(name=KUBE_WATCH_SIGNAL)
    def watch(self, request: ObjectWatch) -> None:
        self.book.watch(request)

    @workflow.signal(name=KUBE_UNWATCH_SIGNAL)
    def unwatch(self, key: str) -> None:
        self.book.unwatch(key)

    @workflow.query(name=KUBE_WATCHES_QUERY)
    def watches(self, since: int) -> ObjectWatchChanges:
        return self.book.changes_since(since)

    @workflow.run
    async def run(self, namespace: str, book: ObjectWatchBook | None = None) -> None:
        observing = self._observe(namespace)
        while not self._history_long():
            await workflow.wait_condition(self._needs_attention(observing))
            if observing.done():
                # Only a non-retryable failure ends the activity: the watches stay, and it starts again.
                try:
                    await observing
                except ActivityError as error:
                    workflow.logger.warning("Kubernetes observer activity failed: %s", error.cause or error)
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
        epoch_ms = int(workflow.now().timestamp() * 1000)
        request = ObserveKubernetes(namespace, workflow.info().workflow_id, epoch_ms)
        return start(stubs.observe_namespace, request, IO.OBSERVE, summary="observe Kubernetes objects")

    def _needs_attention(self, observing: workflow.ActivityHandle[None]) -> Callable[[], bool]:
        return lambda: not self.book.watches or self._history_long() or observing.done()

    def _history_long(self) -> bool:
        info = workflow.info()
        return info.is_continue_as_new_suggested() or info.get_current_history_length() > HISTORY_LIMIT
