"""The Kubernetes observer of one namespace: what RayJob workflows, the observer workflow and its activity
tell each other, and the observer's pure decisions (which object a watch follows, who gets which view,
when a watch is done). Pure: workflows and activities both import this module.

One observer per Kubernetes namespace (and raypilot task queue) LISTs then WATCHes the namespace's
RayClusters (all of them: a clusterSelector picks one raypilot did not create), the batch Jobs carrying
raypilot's `app.kubernetes.io/created-by` label and the head Pods (`ray.io/node-type=head`; KubeRay labels
Pods itself), and signals each workflow that registered an interest
in one of them (signal `k8s_observed`) when that object's view changed: three watch streams per namespace
whatever the number of RayJobs. The views are those the per-object wait activities compare
(`wire.views`), so a RayJob decides on the same fields either way.

A watch names what the workflow waits for (`until`): "ready" (a RayCluster in Initializing) and "finished"
(a submitter Job) are done once the observer delivered a view that ends the wait (or the object is gone);
"change" (a head Pod) lasts until the workflow is gone or unwatches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from wire.kubernetes import Observation
from wire.views import raycluster_ready
from wire.watch_book import BookChanges, VersionedBook, ViewVersion

KUBE_OBSERVER_WORKFLOW: Final = "KubernetesObserverWorkflow"
KUBE_WATCH_SIGNAL: Final = "watch"
KUBE_UNWATCH_SIGNAL: Final = "unwatch"
KUBE_UNWATCH_KEYS_SIGNAL: Final = "unwatch-keys"
KUBE_WATCHES_QUERY: Final = "watches"
# The signal a RayJob workflow receives with the newest view of an object it registered for.
KUBE_OBSERVED_SIGNAL: Final = "k8s_observed"
KUBE_OBSERVER_ID_PREFIX: Final = "raypilot-k8s-observer"

ObservedKind = Literal["RayCluster", "Job", "HeadPod"]
WatchGoal = Literal["change", "ready", "finished"]


def kube_observer_workflow_id(task_queue: str, namespace: str) -> str:
    """The fixed id of one namespace's Kubernetes observer, per raypilot deployment (its task queue)."""
    return f"{KUBE_OBSERVER_ID_PREFIX}/{task_queue}/{namespace}"


def object_key(kind: str, name: str) -> str:
    """An observed object in the namespace: a RayCluster or Job by name, a head Pod by its cluster's name."""
    return f"{kind}/{name}"


@dataclass(frozen=True)
class ObjectWatch:
    """Workflow `workflow_id` waits for changes of object `kind`/`name` in `namespace` (HeadPod: `name` is
    the RayCluster's)."""

    kind: ObservedKind
    namespace: str
    name: str
    workflow_id: str
    until: WatchGoal = "change"
    # The view the workflow holds already: the observer sends only views that differ from it.
    last_view: dict[str, Any] | None = None

    @property
    def object(self) -> str:
        return object_key(self.kind, self.name)

    @property
    def key(self) -> str:
        """Several workflows may watch one object (a shared cluster): one book entry per workflow."""
        return f"{self.object}/{self.workflow_id}"


@dataclass(frozen=True)
class ObservedObject:
    """What the observer saw of one object: the trimmed object and its view (an `Observation`, as the wait
    activities return it), and a version ordering views: (observer epoch in ms, activity attempt, delivery
    round); a workflow keeps only a view newer than the one it holds."""

    kind: ObservedKind
    name: str
    observation: Observation
    version: ViewVersion

    @property
    def object(self) -> str:
        return object_key(self.kind, self.name)


@dataclass(frozen=True)
class ObserveKubernetes:
    """The observer activity's input: the namespace, the observer workflow to read watches from, the epoch of
    the activity's start (first part of every version it sends) and how often it reads the book."""

    namespace: str
    observer_id: str
    epoch_ms: int
    book_seconds: float = 1.0


# The `watches` query's answer (the watches added and removed since the activity's last look).
ObjectWatchChanges = BookChanges[ObjectWatch]


@dataclass
class ObjectWatchBook(VersionedBook[ObjectWatch]):
    """The observer workflow's watches, by `ObjectWatch.key` (object and workflow). A registration of a
    watch already there still bumps it, so the activity sends its object's view again: a workflow
    registering again asks for a fresh look."""

    # Redeclared with the watch type so that a book passed on by continue-as-new decodes into `ObjectWatch`es.
    watches: dict[str, ObjectWatch] = field(default_factory=dict)

    REGISTRATION_REFRESHES: ClassVar[bool] = True

    @classmethod
    def key_of(cls, watch: ObjectWatch) -> str:
        return watch.key


# ---- what the activity decides -------------------------------------------------------------------------


def cached_object_key(kind: ObservedKind, obj: Mapping[str, Any]) -> str | None:
    """The observed object a listed/watched item belongs to: a RayCluster or Job by its name, a head Pod by
    its `ray.io/cluster` label (None: a Pod of no cluster)."""
    metadata = obj.get("metadata") or {}
    if kind == "HeadPod":
        cluster = (metadata.get("labels") or {}).get("ray.io/cluster")
        return object_key(kind, cluster) if cluster else None
    name = metadata.get("name")
    return object_key(kind, name) if name else None


@dataclass(frozen=True)
class ObjectDelivery:
    workflow_id: str
    key: str  # the watch's key
    watch: ObjectWatch
    observation: Observation


def object_deliveries(
    watches: Mapping[str, ObjectWatch],
    observations: Mapping[str, Observation],
    sent: Mapping[str, dict[str, Any]],
) -> list[ObjectDelivery]:
    """Which workflow gets which view: every watch whose object was looked at this round (`observations`, by
    object key: the objects that changed, and those of new watches), that wants that view, and whose view
    differs from the one last sent for that watch. After a restart `sent` is empty: every watch gets its
    current view once."""
    found: list[ObjectDelivery] = []
    for key, watch in watches.items():
        observation = observations.get(watch.object)
        if observation is None or not wants_view(watch, observation.view):
            continue
        if sent.get(key) != observation.view:
            found.append(ObjectDelivery(watch.workflow_id, key, watch, observation))
    return found


def wants_view(watch: ObjectWatch, view: Mapping[str, Any]) -> bool:
    """Whether the watch's workflow wants this view at all: a "ready" watch only the view that ends its wait
    (the RayCluster ready or gone; each intermediate state would cost the workflow a signal and a workflow
    task for nothing), the others every change."""
    return watch.until != "ready" or ends_watch(watch.until, watch.kind, view)


def ends_watch(goal: WatchGoal, kind: ObservedKind, view: Mapping[str, Any]) -> bool:
    """Whether a delivered view ends the wait it was sent for: the object is gone, or (goal "ready") the
    RayCluster is ready, or (goal "finished") the Job has a Complete or Failed condition."""
    if not view.get("exists", False):
        return goal != "change"
    if goal == "ready" and kind == "RayCluster":
        return raycluster_ready(view)
    if goal == "finished" and kind == "Job":
        return any(
            condition[:2] in (["Complete", "True"], ["Failed", "True"])
            for condition in view.get("conditions") or []
        )
    return False


def ends_cluster_wait(view: Mapping[str, Any]) -> bool:
    """The RayJob's Initializing wait ends on a ready RayCluster or a gone one (as `k8s.wait_raycluster`
    with until="ready")."""
    return not view.get("exists", False) or raycluster_ready(view)
