"""What adopting a RayService's leftovers changes (pure, table-tested).

After `kubectl delete rayservice.ray.io/NAME --cascade=orphan` KubeRay leaves the RayCluster(s) labelled
`ray.io/originated-from-cr-name=NAME`, the Services `NAME-head-svc` and `NAME-serve-svc` (and, with an
incremental upgrade, the Gateway and HTTPRoute), all without an owner. Adopting gives them raypilot's
ownership labels, the `raypilot.io/workflow-id` annotation and, when a `raypilot.io` object stands for the
RayService, an ownerReference to it. The active cluster is the one the serve Service selects. When its spec is
the one the manifest asks for, it gets raypilot's spec hash, so the workflow keeps it (no upgrade, no dropped
request); otherwise it keeps a hash of its own spec, and the workflow's usual comparison starts an upgrade.

"The one the manifest asks for" is judged as the API server stores specs: KubeRay's CRD schema gives ports a
default protocol (TCP), which a real API server writes into the stored cluster, so the manifest is compared
with those defaults filled in (`as_stored`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from models.hashing import cluster_hash_annotations, cluster_spec_hash
from models.meta import ObjectMeta
from models.naming import (
    KIND_RAYSERVICE,
    LABEL_CLUSTER,
    LABEL_ORIGINATED_FROM_CR_NAME,
    LABEL_ORIGINATED_FROM_CRD,
    head_service_name,
    ownership_labels,
    serve_service_name,
    workflow_annotations,
    workflow_id,
)
from models.raycluster import RayClusterSpec
from models.rayservice import RayService


@dataclass(frozen=True)
class ObjectPatch:
    """A JSON merge patch of one object (kind, name) in the RayService's namespace."""

    kind: str
    name: str
    patch: dict[str, Any]


@dataclass(frozen=True)
class AdoptionPlan:
    cluster: str = ""  # the adopted active cluster ("": nothing to adopt)
    spec_matches: bool = False  # kept as it is; else the workflow upgrades it
    patches: list[ObjectPatch] = field(default_factory=list)


def leftover_selector(name: str) -> str:
    """KubeRay's labels of what a RayService created."""
    return f"{LABEL_ORIGINATED_FROM_CR_NAME}={name},{LABEL_ORIGINATED_FROM_CRD}={KIND_RAYSERVICE}"


def _orphaned(obj: dict[str, Any], owner_uid: str) -> bool:
    """No owner, or already the object's (adopting twice changes nothing)."""
    owners = obj.get("metadata", {}).get("ownerReferences") or []
    return all(owner.get("uid") == owner_uid for owner in owners) if owner_uid else not owners


def active_cluster(
    clusters: list[dict[str, Any]], serve_service: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The cluster the serve Service selects (traffic goes there); with no such Service, the only one."""
    selected = ((serve_service or {}).get("spec") or {}).get("selector", {}).get(LABEL_CLUSTER)
    for cluster in clusters:
        if cluster["metadata"]["name"] == selected:
            return cluster
    return clusters[0] if len(clusters) == 1 else None


def adopted_metadata(kind: str, meta: ObjectMeta, owner: dict[str, Any] | None) -> dict[str, Any]:
    """The metadata an adopted leftover of the RayJob or RayService (`kind`, `meta`) is patched with:
    raypilot's ownership labels, its workflow's id and, with a raypilot.io object (`owner`), a controller
    ownerReference to it."""
    metadata: dict[str, Any] = {
        "labels": ownership_labels(kind, meta.name),
        "annotations": workflow_annotations(workflow_id(kind, meta.namespace, meta.name)),
    }
    if owner is not None:
        metadata["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
    return metadata


def as_stored(spec: RayClusterSpec) -> RayClusterSpec:
    """`spec` with the defaults KubeRay's RayCluster CRD schema declares for what manifests leave out, as a
    real API server stores it: every container, init container and head Service port's `protocol: TCP`."""
    dumped = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    head = dumped.get("headGroupSpec") or {}
    ports: list[dict[str, Any]] = list(((head.get("headService") or {}).get("spec") or {}).get("ports") or [])
    for group in [head, *(dumped.get("workerGroupSpecs") or [])]:
        pod = (group.get("template") or {}).get("spec") or {}
        for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
            ports += container.get("ports") or []
    for port in ports:
        port.setdefault("protocol", "TCP")
    return RayClusterSpec.model_validate(dumped)


def adoption_plan(
    rayservice: RayService,
    clusters: list[dict[str, Any]],
    services: dict[str, dict[str, Any]],
    routes: list[tuple[str, str]],
    owner: dict[str, Any] | None,
) -> AdoptionPlan:
    """From KubeRay's leftovers: `clusters` labelled for the RayService, its `services` by name, the Gateway
    and HTTPRoute (kind, name) present, and the raypilot.io object's ownerReference (None without one)."""
    owner_uid = str((owner or {}).get("uid") or "")
    mine = [c for c in clusters if _orphaned(c, owner_uid)]
    name = rayservice.metadata.name
    cluster = active_cluster(mine, services.get(serve_service_name(name)))
    if cluster is None:
        return AdoptionPlan()
    desired = rayservice.spec.ray_cluster_config
    actual = RayClusterSpec.model_validate(cluster.get("spec") or {})
    matches = cluster_spec_hash(as_stored(actual)) == cluster_spec_hash(as_stored(desired))
    ownership = adopted_metadata(KIND_RAYSERVICE, rayservice.metadata, owner)
    cluster_meta = {
        **ownership,
        "annotations": {
            **ownership["annotations"],
            **cluster_hash_annotations(desired if matches else actual),
        },
    }
    patches = [ObjectPatch("RayCluster", cluster["metadata"]["name"], {"metadata": cluster_meta})]
    for service_name in (head_service_name(name), serve_service_name(name)):
        service = services.get(service_name)
        if service is not None and _orphaned(service, owner_uid):
            patches.append(ObjectPatch("Service", service_name, {"metadata": ownership}))
    patches += [ObjectPatch(kind, route_name, {"metadata": ownership}) for kind, route_name in routes]
    return AdoptionPlan(cluster["metadata"]["name"], matches, patches)
