"""What the RayService workflow decides beyond KubeRay's reconcile functions: generations, what to watch and
until when, when the status changed, what the `status` query shows, and how an in-place update is phrased.

KubeRay polls every 2 s; the workflow instead waits for the next thing that can change a decision: a handler
(apply, delete, a control), one long wait activity per cluster (the head becoming ready, then Serve and the
head Pod), the ready endpoints of the serve Services while none are counted, and one durable timer for the
earliest deadline (a dangling cluster's deletion, the initializing timeout, the next traffic step). These
functions decide those waits; the workflow only runs them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import ValidationError

from models.base import dump_status
from models.features import FeatureGates
from models.manifest import ManifestError, parse_rayservice
from models.meta import is_condition_true
from models.naming import DEFAULT_DASHBOARD_PORT, LABEL_SERVE, head_service_name
from models.raycluster import RayCluster, RayClusterConditionType
from models.rayservice import RayService, RayServiceConditionType, RayServiceStatuses, RayServiceUpgradeType
from models.validation import validate_rayservice, validate_update
from workflows.decisions.rayservice.cluster import in_place_cluster_update
from workflows.decisions.rayservice.conditions import RayServiceEvent
from workflows.decisions.rayservice.serve_status import ServeDetails, parse_serve_details
from workflows.decisions.rayservice.services import head_pod_serve_label

__all__ = [
    "InPlaceUpdate",
    "Watch",
    "WatchKind",
    "cluster_from_object",
    "cluster_names",
    "clusters_to_forget",
    "current_details",
    "dashboard_port",
    "default_target_capacities",
    "desired_watches",
    "earliest_deadline",
    "head_serve_label_change",
    "head_service_of",
    "in_place_update_request",
    "is_head_pod_ready",
    "manifest_error",
    "manifest_update_error",
    "next_generation",
    "rayservice_at",
    "serve_update_event",
    "should_continue_as_new",
    "should_finish_aborted_upgrade",
    "stamp_status_update",
    "status_query",
    "view_key",
    "with_gated_upgrade_strategy",
]

WatchKind = Literal["head_ready", "serve", "endpoints", "gateway", "ranks"]


def next_generation(
    current_manifest: Mapping[str, Any], new_manifest: Mapping[str, Any], generation: int
) -> int:
    """metadata.generation after `apply`: it moves only when the spec changes (metadata edits such as a new
    annotation are applied without a new generation, as Kubernetes does)."""
    if current_manifest.get("spec") == new_manifest.get("spec"):
        return generation
    return generation + 1


def rayservice_at(manifest: Mapping[str, Any], generation: int, status: RayServiceStatuses) -> RayService:
    """The RayService object the KubeRay decisions take: the desired manifest, its generation and the
    workflow's status."""
    rayservice = parse_rayservice(manifest)
    rayservice.metadata.generation = generation
    rayservice.status = status
    return rayservice


def should_continue_as_new(suggested: bool, history_length: int, history_limit: int | None) -> bool:
    """Continue as new when the server suggests it, or (the test knob) once history reaches
    `history_limit` events."""
    return suggested or (history_limit is not None and history_length >= history_limit)


def _comparable(status: RayServiceStatuses) -> dict[str, Any]:
    data = status.model_dump(mode="json", by_alias=True)
    data.pop("lastUpdateTime", None)
    return data


def stamp_status_update(
    old: RayServiceStatuses, new: RayServiceStatuses, now: datetime
) -> RayServiceStatuses:
    """KubeRay writes the status only when it changed, stamping lastUpdateTime then; an unchanged status
    keeps its old lastUpdateTime."""
    if _comparable(old) == _comparable(new):
        return new.model_copy(update={"last_update_time": old.last_update_time})
    return new.model_copy(update={"last_update_time": now})


def earliest_deadline(*deadlines: datetime | None) -> datetime | None:
    """The one durable timer the workflow arms: the earliest of its deadlines."""
    present = [deadline for deadline in deadlines if deadline is not None]
    return min(present, default=None)


def is_head_pod_ready(cluster: RayCluster | None, status_conditions_gate: bool = True) -> bool:
    """Serve is reconciled only once the head Pod is ready: the RayCluster's HeadPodReady condition (gate
    RayClusterStatusConditions on), else the cluster's `ready` state (KubeRay then reads the Pod itself)."""
    if cluster is None:
        return False
    if status_conditions_gate:
        return is_condition_true(cluster.status.conditions, RayClusterConditionType.HEAD_POD_READY)
    return cluster.status.state == "ready"


def dashboard_port(cluster: RayCluster) -> int:
    """FetchHeadServiceURL's port: the head container's port named "dashboard", else 8265."""
    containers = cluster.spec.head_group_spec.template.spec.containers
    port = containers[0].port_number("dashboard") if containers else None
    return DEFAULT_DASHBOARD_PORT if port is None else port


def head_serve_label_change(
    head_pod: Mapping[str, Any] | None, exclude_head_pod_from_serve_svc: bool, proxy_healthy: bool | None
) -> str | None:
    """updateHeadPodServeLabel: the ray.io/serve value to write on the head Pod, or None when it already
    has it (or there is no head Pod, or its health is unknown)."""
    if head_pod is None or proxy_healthy is None:
        return None
    wanted = head_pod_serve_label(exclude_head_pod_from_serve_svc, proxy_healthy)
    current = ((head_pod.get("metadata") or {}).get("labels") or {}).get(LABEL_SERVE)
    return None if current == wanted else wanted


@dataclass(frozen=True)
class InPlaceUpdate:
    """An UpdateSpec's content: the new spec, and label/annotation changes (None removes a key)."""

    spec: dict[str, Any]
    labels: dict[str, str | None]
    annotations: dict[str, str | None]


def _string_map_changes(current: Mapping[str, str], goal: Mapping[str, str]) -> dict[str, str | None]:
    changes: dict[str, str | None] = {key: None for key in current if key not in goal}
    changes.update({key: value for key, value in goal.items() if current.get(key) != value})
    return changes


def in_place_update_request(current: Mapping[str, Any], goal: Mapping[str, Any]) -> InPlaceUpdate:
    """modifyRayCluster phrased as a spec replacement plus metadata changes: the goal's spec (the existing
    spec.suspend kept), labels and annotations replaced."""
    updated = in_place_cluster_update(current, goal)
    current_meta = current.get("metadata") or {}
    updated_meta = updated["metadata"]
    return InPlaceUpdate(
        spec=updated["spec"],
        labels=_string_map_changes(current_meta.get("labels") or {}, updated_meta["labels"]),
        annotations=_string_map_changes(current_meta.get("annotations") or {}, updated_meta["annotations"]),
    )


def view_key(view: Mapping[str, Any] | None) -> str:
    """A stable text form of a wait's last view: a running wait is kept as long as its view is current."""
    return "" if view is None else json.dumps(view, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Watch:
    """One long wait activity: `head_ready` (the RayCluster until its head Pod is ready or it is gone),
    `serve` (Serve and the head Pod of a ready cluster until they differ from `last_view`), `endpoints`
    (the serve Services' ready endpoints until they differ from the counts in `last_view`) or `gateway`
    (the Gateway and HTTPRoute statuses, target "<gateway>,<route>") or `ranks` (one read of a cluster's
    Serve replica ranks, `last_view_key` the settled replica set read)."""

    kind: WatchKind
    target: str  # the cluster name; for endpoints the Service names joined by ","
    last_view_key: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.target, self.last_view_key)


def desired_watches(
    clusters: Mapping[str, RayCluster | None],
    serve_views: Mapping[str, Mapping[str, Any] | None],
    endpoint_services: Sequence[str],
    endpoint_counts: Mapping[str, int],
    endpoints_expected: bool,
    status_conditions_gate: bool = True,
) -> list[Watch]:
    """What the workflow waits on besides handlers and its timer.

    Each existing cluster (active and pending) has one wait: until its head Pod is ready, then on Serve and
    the head Pod (compared with the last view seen, so an idle cluster never wakes the workflow). The ready
    endpoints are watched only while Serve is ready but no endpoint is counted yet (Services just created or
    switched, a head label just written): afterwards a change of the endpoints always comes with a change
    Serve or the head Pod shows.
    """
    watches: list[Watch] = []
    for name, cluster in clusters.items():
        if cluster is None:
            continue
        if not is_head_pod_ready(cluster, status_conditions_gate):
            watches.append(Watch("head_ready", name))
        else:
            watches.append(Watch("serve", name, view_key(serve_views.get(name))))
    if (
        endpoints_expected
        and endpoint_services
        and sum(endpoint_counts.get(s, 0) for s in endpoint_services) == 0
    ):
        counts = {service: endpoint_counts.get(service, 0) for service in endpoint_services}
        watches.append(Watch("endpoints", ",".join(endpoint_services), view_key(counts)))
    return watches


def _replicas_by_deployment(details: ServeDetails) -> dict[tuple[str, str], list[dict[str, Any]]]:
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for app in details.applications:
        for deployment in app.deployments:
            if not deployment.replicas:
                continue
            replicas = []
            for replica in sorted(deployment.replicas, key=lambda r: (r.rank is None, r.rank, r.replica_id)):
                entry: dict[str, Any] = {"replicaId": replica.replica_id, "state": replica.state}
                for key, value in (
                    ("rank", replica.rank),
                    ("nodeRank", replica.node_rank),
                    ("localRank", replica.local_rank),
                    ("worldSize", replica.world_size),
                ):
                    if value is not None:
                        entry[key] = value
                replicas.append(entry)
            found[(app.name, deployment.name)] = replicas
    return found


def status_query(
    status: RayServiceStatuses, serve_details_by_cluster: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The `status` query: the RayService status as KubeRay writes it (camelCase, Go omitempty) and, beyond
    KubeRay, under each deployment of an application shown the `replicas` Serve reports (id, state, and the
    replica's rank / nodeRank / localRank / worldSize where reported)."""
    body = dump_status(status)
    for side in ("activeServiceStatus", "pendingServiceStatus"):
        side_status = body.get(side) or {}
        details = serve_details_by_cluster.get(str(side_status.get("rayClusterName") or ""))
        applications = side_status.get("applicationStatuses") or {}
        if details is None or not applications:
            continue
        replicas = _replicas_by_deployment(parse_serve_details(details))
        for app_name, app in applications.items():
            for deployment_name, deployment in (app.get("serveDeploymentStatuses") or {}).items():
                found = replicas.get((app_name, deployment_name))
                if found:
                    deployment["replicas"] = found
    return body


def head_service_of(cluster_name: str) -> str:
    """The RayCluster's own head Service, through which its dashboard is reached."""
    return head_service_name(cluster_name)


def cluster_names(status: RayServiceStatuses) -> tuple[str, str]:
    """(active, pending) cluster names of the status ("" when none)."""
    return status.active_service_status.ray_cluster_name, status.pending_service_status.ray_cluster_name


def clusters_to_forget(known: Iterable[str], active: str, pending: str, owned: Iterable[str]) -> list[str]:
    """Observations of clusters that are neither active, pending nor still owned are dropped."""
    keep = {active, pending, *owned}
    return [name for name in known if name not in keep]


def cluster_from_object(obj: Mapping[str, Any] | None, fallback: RayService) -> RayCluster | None:
    """A RayCluster object as read from the cluster, as the model the decisions take. A spec the model does
    not know (fields defaulted by a newer CRD) is replaced by the RayService's cluster spec, which is what
    the workflow wrote; metadata (the hash annotations) and status are kept."""
    if obj is None:
        return None
    try:
        return RayCluster.model_validate(
            {key: obj[key] for key in ("apiVersion", "kind", "metadata", "spec", "status") if key in obj}
        )
    except ValidationError:
        return RayCluster.model_validate(
            {
                "metadata": obj.get("metadata") or {},
                "spec": fallback.spec.ray_cluster_config.model_dump(by_alias=True, exclude_unset=True),
                "status": obj.get("status") or {},
            }
        )


def manifest_error(manifest: Mapping[str, Any], gates: FeatureGates) -> str | None:
    """Why KubeRay would reject this manifest as a new RayService (its message), or None."""
    try:
        rayservice = parse_rayservice(manifest)
    except ManifestError as error:
        return str(error)
    return validate_rayservice(rayservice, gates)


def manifest_update_error(
    current: Mapping[str, Any], new: Mapping[str, Any], gates: FeatureGates
) -> str | None:
    """Why `apply` must reject `new` in place of `current`: it does not parse, names another object, changes
    an immutable field, or fails validation (KubeRay's messages)."""
    try:
        replacement = parse_rayservice(new)
    except ManifestError as error:
        return str(error)
    try:
        existing = parse_rayservice(current)
    except ManifestError:
        return validate_rayservice(replacement, gates)
    return validate_update(existing, replacement, gates)


def serve_update_event(namespace: str, cluster: str, error: str | None) -> RayServiceEvent:
    """The event after a Serve config PUT: UpdatedServeApplications, or FailedToUpdateServeApplications with
    the dashboard's error."""
    if error is None:
        return RayServiceEvent(
            "Normal",
            "UpdatedServeApplications",
            f"Updated serve applications to the RayCluster {namespace}/{cluster}",
        )
    return RayServiceEvent(
        "Warning",
        "FailedToUpdateServeApplications",
        f"Failed to update serve applications to the RayCluster {namespace}/{cluster}: {error}",
    )


def current_details(status: RayServiceStatuses, phase: str, upgrade_line: str = "") -> str:
    """The Web UI's current details: the phase, the clusters, the applications and endpoints, and during an
    incremental upgrade its progress line."""
    active, pending = cluster_names(status)
    parts = [phase]
    if active:
        apps = status.active_service_status.application_statuses
        running = sum(1 for app in apps.values() if app.status == "RUNNING")
        parts.append(f"active {active}" + (f" ({running}/{len(apps)} apps RUNNING)" if apps else ""))
    if pending:
        apps = status.pending_service_status.application_statuses
        running = sum(1 for app in apps.values() if app.status == "RUNNING")
        parts.append(f"pending {pending}" + (f" ({running}/{len(apps)} apps RUNNING)" if apps else ""))
    parts.append(f"{status.num_serve_endpoints} serve endpoints")
    if upgrade_line:
        parts.append(upgrade_line)
    return "; ".join(parts)


def default_target_capacities(status: RayServiceStatuses) -> RayServiceStatuses:
    """reconcileServeTargetCapacity's defaults, written into the status: an unset active targetCapacity is
    100 and an unset pending one 0."""
    active, pending = status.active_service_status, status.pending_service_status
    if active.target_capacity is not None and pending.target_capacity is not None:
        return status
    result = status.model_copy(deep=True)
    if result.active_service_status.target_capacity is None:
        result.active_service_status.target_capacity = 100
    if result.pending_service_status.target_capacity is None:
        result.pending_service_status.target_capacity = 0
    return result


def should_finish_aborted_upgrade(status: RayServiceStatuses, incremental: bool) -> bool:
    """A NewCluster upgrade aborted by the `abort` control ends at once: no traffic ever reached the pending
    cluster, so it is dropped (it dangles and is deleted after the deletion delay). An incremental one rolls
    back step by step instead."""
    return (
        not incremental
        and is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
        and bool(status.pending_service_status.ray_cluster_name)
    )


def with_gated_upgrade_strategy(rayservice: RayService, gates: FeatureGates) -> RayService:
    """raypilot: with the RayServiceIncrementalUpgrade gate off, NewClusterWithIncrementalUpgrade falls back
    to NewCluster (KubeRay then treats the type as "no zero-downtime upgrade" and ignores cluster changes)."""
    strategy = rayservice.spec.upgrade_strategy
    if (
        gates.ray_service_incremental_upgrade
        or strategy is None
        or strategy.type != RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
    ):
        return rayservice
    fallback = strategy.model_copy(update={"type": RayServiceUpgradeType.NEW_CLUSTER})
    spec = rayservice.spec.model_copy(update={"upgrade_strategy": fallback})
    return rayservice.model_copy(update={"spec": spec})
