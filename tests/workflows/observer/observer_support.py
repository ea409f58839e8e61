"""What the observer workflow tests on the dev and time-skipping servers share: the two kinds of observer
(the Ray job observer and the Kubernetes observer) with their names and a first watch, and the start of one
as the watching workflows' activity starts it (signal-with-start of its first watch,
activities/observer_fanout.py `register_watch`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy

from wire import names
from wire.dashboard import DashboardTarget
from wire.kubernetes_observer import (
    KUBE_OBSERVER_WORKFLOW,
    KUBE_WATCH_SIGNAL,
    KUBE_WATCHES_QUERY,
    ObjectWatch,
    ObjectWatchChanges,
    kube_observer_workflow_id,
)
from wire.observer import (
    OBSERVER_WORKFLOW,
    WATCH_SIGNAL,
    WATCHES_QUERY,
    JobWatch,
    WatchChanges,
    observer_workflow_id,
)
from workflows.observer.kubernetes import KubernetesObserverWorkflow
from workflows.observer.workflow import RayJobObserverWorkflow

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]


@dataclass(frozen=True)
class Observer:
    """One kind of observer: its workflow, activity name, query, first watch and id."""

    workflow: type
    workflow_type: str
    activity_name: str
    query: str
    changes_type: type
    watch_signal: str
    watch: Any
    workflow_id: Callable[[str, str], str]


OBSERVERS = {
    "ray-jobs": Observer(
        RayJobObserverWorkflow, OBSERVER_WORKFLOW, names.OBSERVE_RAY_JOBS, WATCHES_QUERY, WatchChanges,
        WATCH_SIGNAL, JobWatch(DashboardTarget("ns", "cluster-head-svc"), "job-1", "rayjob/ns/job"),
        observer_workflow_id,
    ),
    "kubernetes": Observer(
        KubernetesObserverWorkflow, KUBE_OBSERVER_WORKFLOW, names.OBSERVE_K8S_NAMESPACE, KUBE_WATCHES_QUERY,
        ObjectWatchChanges, KUBE_WATCH_SIGNAL, ObjectWatch("RayCluster", "ns", "cluster", "rayjob/ns/job"),
        kube_observer_workflow_id,
    ),
}  # fmt: skip


async def start_observer(
    client: Client, observer: Observer, task_queue: str, watch: Any | None = None
) -> WorkflowHandle[Any, Any]:
    """The observer of namespace "ns" on `task_queue`, started by its first watch (`watch`, else the kind's
    own): a signal-with-start, as the watching workflows' activity sends it."""
    return await client.start_workflow(
        observer.workflow_type,
        "ns",
        id=observer.workflow_id(task_queue, "ns"),
        task_queue=task_queue,
        start_signal=observer.watch_signal,
        start_signal_args=[observer.watch if watch is None else watch],
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
