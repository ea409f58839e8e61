"""The one argument of each Kubernetes and Gateway activity, and the results of the waits.

Pure dataclasses (no I/O imports), shared by the workflows and the activities. Object bodies are
built by the workflows' decisions; the activities only add what the inputs ask for (ownership labels, an
owner reference) and never invent names or ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from models.naming import (
    ANNOTATION_RAYJOB_UID,
    ownership_label_selector,
    ownership_labels,
    workflow_annotations,
)
from models.operator import OperatorConfig

Propagation = Literal["Background", "Foreground", "Orphan"]
EventType = Literal["Normal", "Warning"]
RayClusterWaitGoal = Literal["change", "ready", "head_ready"]
GatewayWaitGoal = Literal["change", "ready"]

# The kinds raypilot creates for a RayJob/RayService, found again by the ownership labels for cleanup,
# in the order they are deleted (traffic first, then what serves it).
OWNED_KINDS: Final = ("HTTPRoute", "Gateway", "Service", "Job", "RayCluster")


@dataclass(frozen=True)
class ObjectKey:
    namespace: str
    name: str


@dataclass(frozen=True)
class Ownership:
    """Whose object this is (docs/contract.md §5): the RayJob/RayService kind and name, and the workflow id.

    `rayjob_uid` (a RayJob run's first execution run id) names the object instance: an existing object of
    the same name with another (or no) uid is an earlier run's leftover, never adopted by a create."""

    kind: str
    name: str
    workflow_id: str
    rayjob_uid: str = ""

    def labels(self) -> dict[str, str]:
        return ownership_labels(self.kind, self.name)

    def annotations(self) -> dict[str, str]:
        annotations = workflow_annotations(self.workflow_id)
        if self.rayjob_uid:
            annotations[ANNOTATION_RAYJOB_UID] = self.rayjob_uid
        return annotations

    def label_selector(self) -> str:
        return ownership_label_selector(self.kind, self.name)


@dataclass(frozen=True)
class OwnerReference:
    """An ownerReference to add, e.g. a per-cluster serve Service owned by its RayCluster (uid from the
    create result)."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = True
    block_owner_deletion: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": self.controller,
            "blockOwnerDeletion": self.block_owner_deletion,
        }


@dataclass(frozen=True)
class InvolvedObject:
    kind: str
    name: str
    namespace: str
    uid: str = ""
    api_version: str = ""


@dataclass(frozen=True)
class RecordEvent:
    """A core/v1 Event named `<involved name>.<event_id>`: the workflow picks `event_id` (e.g. its event
    sequence number), so a retried activity finds the Event it created instead of adding a second one."""

    involved: InvolvedObject
    event_id: str
    reason: str
    message: str
    type: EventType = "Normal"


@dataclass(frozen=True)
class CreateObject:
    """Create `body` (idempotent: an existing object of that name is returned as it is). `event`: the
    Kubernetes Event the activity posts once the object exists (best effort: a failure to post is logged,
    never fails the create), so that a RayJob's CreatedRayCluster costs no activity of its own."""

    body: dict[str, Any]
    ownership: Ownership | None = None
    owner: OwnerReference | None = None
    event: RecordEvent | None = None


@dataclass(frozen=True)
class UpdateSpec:
    """Replace the spec of an existing object and merge labels/annotations into its metadata (a value of
    None removes the key); status and everything else stay as the cluster has them."""

    namespace: str
    name: str
    spec: dict[str, Any]
    labels: dict[str, str | None] = field(default_factory=dict)
    annotations: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class DeleteObject:
    """Delete one object; `uid` guards against deleting a namesake created since. `event`: the Kubernetes
    Event the activity posts when this call deleted the object (not when it was gone already; best effort as
    for `CreateObject`)."""

    namespace: str
    name: str
    propagation: Propagation = "Background"
    uid: str | None = None
    event: RecordEvent | None = None


@dataclass(frozen=True)
class ListObjects:
    namespace: str
    label_selector: str = ""


@dataclass(frozen=True)
class OwnedObjects:
    """The objects carrying a RayJob's/RayService's ownership labels, of the given kinds (default: every kind
    raypilot creates), except the names in `keep`."""

    namespace: str
    owner_kind: str
    owner_name: str
    kinds: tuple[str, ...] = OWNED_KINDS
    keep: tuple[str, ...] = ()


@dataclass(frozen=True)
class RayResourceKey:
    """A RayJob or RayService custom resource (it may not exist: workflows can start without one)."""

    kind: str
    namespace: str
    name: str
    # raypilot.io/v1 for an object the controller drives (models.source); the default keeps older inputs.
    api_version: str = "ray.io/v1"


@dataclass(frozen=True)
class HeadPodKey:
    namespace: str
    cluster_name: str


@dataclass(frozen=True)
class ClusterPods:
    """Every Pod of one RayCluster (label ray.io/cluster), e.g. to restart them group by group."""

    namespace: str
    cluster_name: str


@dataclass(frozen=True)
class PodLabels:
    namespace: str
    name: str
    labels: dict[str, str | None]


@dataclass(frozen=True)
class ServiceEndpoints:
    namespace: str
    service_name: str


# ---- waits ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WaitReadyEndpoints:
    """Until the ready-endpoint count of any of `service_names` differs from `last_counts`."""

    namespace: str
    service_names: list[str]
    last_counts: dict[str, int] | None = None


@dataclass(frozen=True)
class WaitRayCluster:
    """Until the RayCluster's observed view differs from `last_view` ("change"), or it is ready (state
    `ready`) / its head pod is ready (HeadPodReady) - or it is gone, in every mode."""

    namespace: str
    name: str
    last_view: dict[str, Any] | None = None
    until: RayClusterWaitGoal = "change"


@dataclass(frozen=True)
class WaitObject:
    """Until the object's view differs from `last_view`: the submitter Job by name, or a RayCluster's head
    Pod (`name` = the cluster name)."""

    namespace: str
    name: str
    last_view: dict[str, Any] | None = None


@dataclass(frozen=True)
class WaitGateway:
    """Until the Gateway (and the HTTPRoute) are ready or their view differs from `last_view`. Both are in
    `namespace` unless `gateway_namespace` / `route_namespace` say otherwise (a shared Gateway, a user-owned
    route). `with_specs`: the view also holds both objects' generations, so a change of a listener's
    allowedRoutes or of the route's rules is seen; `namespace_labels_of`: a namespace whose labels the view
    holds too (a shared Gateway admitting routes by a namespace selector)."""

    namespace: str
    gateway_name: str
    route_name: str | None = None
    last_view: dict[str, Any] | None = None
    until: GatewayWaitGoal = "ready"
    poll_seconds: float = 2.0
    gateway_namespace: str | None = None
    route_namespace: str | None = None
    with_specs: bool = False
    namespace_labels_of: str | None = None


@dataclass(frozen=True)
class Observation:
    """What a wait returns: the trimmed object (None: absent) and its view, to pass back as `last_view`."""

    object: dict[str, Any] | None
    view: dict[str, Any]


@dataclass(frozen=True)
class WaitClusterPods:
    """Until the Pods of RayCluster `cluster_name` (label ray.io/cluster) differ from `last_view`
    (`wire.views.cluster_pods_view`: each Pod's name, uid, group, phase, readiness and deletion)."""

    namespace: str
    cluster_name: str
    last_view: dict[str, Any] | None = None


@dataclass(frozen=True)
class PodsObservation:
    """What the Pods wait returns: the cluster's Pods (trimmed as `list_cluster_pods` trims them) and their
    view, to pass back as `last_view`."""

    pods: list[dict[str, Any]]
    view: dict[str, Any]


@dataclass(frozen=True)
class GatewayObservation:
    gateway: dict[str, Any] | None
    route: dict[str, Any] | None
    ready: bool
    view: dict[str, Any]
    # The labels of WaitGateway.namespace_labels_of (None: not asked for, or no such namespace).
    namespace_labels: dict[str, str] | None = None


@dataclass(frozen=True)
class PatchRoute:
    """A JSON Patch (RFC 6902) of an HTTPRoute its users own; its `test` operations guard what it replaces."""

    namespace: str
    name: str
    patch: list[dict[str, Any]]


@dataclass(frozen=True)
class RoutePatched:
    """The route after the patch (`applied`), or as it is now when a `test` failed because it changed since it
    was read (not applied: decide again on it); `route` None when it is gone."""

    route: dict[str, Any] | None
    applied: bool


# ---- Temporal ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EarlierRuns:
    """The runs of a workflow id other than `run_id` (the asking run itself)."""

    workflow_id: str
    run_id: str


@dataclass(frozen=True)
class EarlierRun:
    """The newest closed run of a workflow id before the asking one: its execution status (the name of
    WorkflowExecutionStatus), what its memo recorded (outcome, generation, spec hash; empty when it has no
    memo) and, when it completed, its result (a RayJob's final status)."""

    run_id: str
    state: str
    outcome: str | None = None
    generation: int = 0
    spec_hash: str = ""
    result: dict[str, Any] | None = None


@dataclass(frozen=True)
class RunStart:
    """What a RayJob run reads once before its first act: the worker's operator configuration and the newest
    earlier run of its workflow id (None: there is none)."""

    config: OperatorConfig
    earlier: EarlierRun | None
