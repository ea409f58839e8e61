"""The Kubernetes Services of a RayService (head, serve, per-cluster serve) and when to re-point them.

KubeRay counterparts (common/service.go, rayservice_controller.go):
- `head_service_manifest`: BuildHeadServiceForRayService (BuildServiceForHeadPod underneath)
- `serve_service_manifest`: BuildServeServiceForRayService / BuildServeService
- `per_cluster_serve_service_manifest`: reconcilePerClusterServeService's object (owned by the RayCluster)
- `should_update_service`, `service_update`: reconcileServices (update only when the selector's
  ray.io/cluster differs; the old clusterIP is kept)
- `services_target_cluster`: which cluster the RayService-level Services follow (Reconcile step 14)
- `serve_port`: GetServePort
- `head_pod_serve_label`: updateHeadPodServeLabel's label value (written only when it changes)

Where raypilot differs, deliberately: every Service carries raypilot's ownership labels and workflow-id
annotation (contract section 5), including the per-cluster serve Service, whose originated-from-cr-name is the
RayService (KubeRay writes the RayCluster's name there); the RayService-level Services have no ownerReference
(the RayService is a workflow). The head Service selects on ray.io/cluster and ray.io/node-type only
(KubeRay adds its app.kubernetes.io labels, which only pods made by KubeRay's own controller carry). Serve
ports are sorted by name so the manifest is deterministic (KubeRay iterates a Go map).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final, Literal

from models.naming import (
    DEFAULT_CLIENT_PORT,
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_GCS_SERVER_PORT,
    DEFAULT_METRICS_PORT,
    DEFAULT_SERVE_PORT,
    KIND_RAYCLUSTER,
    KIND_RAYSERVICE,
    LABEL_CLUSTER,
    LABEL_IDENTIFIER,
    LABEL_NODE_TYPE,
    LABEL_SERVE,
    head_identifier,
    head_service_name,
    ownership_labels,
    serve_service_label,
    serve_service_name,
    workflow_annotations,
    workflow_id,
)
from models.raycluster import RAY_API_VERSION, RayCluster
from models.rayservice import RayService

__all__ = [
    "MISSING_SERVE_PORT_MESSAGE",
    "MissingServePortError",
    "cluster_name_from_service",
    "head_pod_serve_label",
    "head_serve_label_change",
    "head_service_manifest",
    "per_cluster_serve_service_manifest",
    "per_cluster_serve_service_to_create",
    "serve_port",
    "serve_service_manifest",
    "service_update",
    "services_target_cluster",
    "should_update_service",
]

MISSING_SERVE_PORT_MESSAGE: Final = (
    "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') in the Ray head "
    "container; otherwise, the Kubernetes service for Ray Serve will not be created."
)
_DEFAULT_PORTS: Final[dict[str, int]] = {
    "client": DEFAULT_CLIENT_PORT,
    "gcs-server": DEFAULT_GCS_SERVER_PORT,
    "dashboard": DEFAULT_DASHBOARD_PORT,
    "metrics": DEFAULT_METRICS_PORT,
    "serve": DEFAULT_SERVE_PORT,
}
_APP_PROTOCOL: Final = "tcp"


class MissingServePortError(ValueError):
    """The head container declares no serve port (and no custom serve Service is given)."""


def _head_ports(cluster: RayCluster) -> dict[str, int]:
    # getServicePorts: the head (first) container's ports; unnamed ones become "<port>-port"; none ->
    # defaults.
    containers = cluster.spec.head_group_spec.template.spec.containers
    ports = {
        (port.name or f"{port.container_port}-port"): port.container_port
        for port in (containers[0].ports if containers else [])
    }
    if not ports:
        ports = dict(_DEFAULT_PORTS)
    ports.setdefault("metrics", DEFAULT_METRICS_PORT)
    return ports


def serve_port(cluster: RayCluster | None) -> int:
    """The head container's port named "serve", else 8000."""
    if cluster is None or not cluster.spec.head_group_spec.template.spec.containers:
        return DEFAULT_SERVE_PORT
    port = cluster.spec.head_group_spec.template.spec.containers[0].port_number("serve")
    return DEFAULT_SERVE_PORT if port is None else port


def _is_serving_port(name: str) -> bool:
    return name == "serve" or name.startswith("serve-")


def _annotations(rayservice: RayService) -> dict[str, str]:
    return workflow_annotations(
        workflow_id(KIND_RAYSERVICE, rayservice.metadata.namespace, rayservice.metadata.name)
    )


def head_service_manifest(
    rayservice: RayService, cluster: RayCluster, cluster_ip_service: bool = False
) -> dict[str, Any]:
    """`<rs>-head-svc` selecting the head Pod of `cluster`. Headless (publishing not-ready addresses) for
    ClusterIP type unless `cluster_ip_service` (KubeRay's ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE)."""
    name = rayservice.metadata.name
    head_group = cluster.spec.head_group_spec
    selector = {LABEL_CLUSTER: cluster.metadata.name, LABEL_NODE_TYPE: "head"}
    ports = [
        {"name": port_name, "port": number, "appProtocol": _APP_PROTOCOL}
        for port_name, number in _head_ports(cluster).items()
    ]
    service_type = head_group.service_type
    labels = {
        **ownership_labels(KIND_RAYSERVICE, name),
        LABEL_NODE_TYPE: "head",
        LABEL_IDENTIFIER: head_identifier(name),
    }
    if head_group.head_service is not None:
        # A user-provided head Service: our selector, labels, name and namespace win; default ports appended.
        service = copy.deepcopy(head_group.head_service)
        spec = service.setdefault("spec", {})
        spec["selector"] = selector
        spec["ports"] = list(spec.get("ports") or []) + ports
        if not spec.get("type") and service_type:
            spec["type"] = service_type
        metadata = service.setdefault("metadata", {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **_annotations(rayservice)}
    else:
        spec = {"selector": selector, "ports": sorted(ports, key=lambda port: str(port["name"]))}
        if service_type:
            spec["type"] = service_type
        if not cluster_ip_service and service_type in ("", "ClusterIP"):
            spec["clusterIP"] = "None"
            spec["publishNotReadyAddresses"] = True
        service = {"spec": spec, "metadata": {"annotations": _annotations(rayservice)}}
    metadata = service["metadata"]
    metadata["name"] = head_service_name(name)
    metadata["namespace"] = rayservice.metadata.namespace
    metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Service", **service}


def _serve_service(rayservice: RayService, cluster: RayCluster, per_cluster: bool) -> dict[str, Any]:
    owner_name = cluster.metadata.name if per_cluster else rayservice.metadata.name
    labels = {
        **ownership_labels(KIND_RAYSERVICE, rayservice.metadata.name),
        LABEL_SERVE: serve_service_label(owner_name),
    }
    selector = {LABEL_CLUSTER: cluster.metadata.name, LABEL_SERVE: "true"}
    ports = [
        {"name": port_name, "port": number}
        for port_name, number in sorted(_head_ports(cluster).items())
        if _is_serving_port(port_name)
    ]
    service_type = rayservice.spec.ray_cluster_config.head_group_spec.service_type
    custom = rayservice.spec.serve_service if not per_cluster else None
    if not ports and custom is None:
        raise MissingServePortError(MISSING_SERVE_PORT_MESSAGE)
    if custom is not None:
        service = copy.deepcopy(custom)
        spec = service.setdefault("spec", {})
        spec["selector"] = selector
        if ports:
            # Auto-detected serve ports, each replaced by the user's port of the same name when there is one.
            user_ports = {port.get("name"): port for port in spec.get("ports") or []}
            spec["ports"] = [user_ports.get(port["name"], port) for port in ports]
        if not spec.get("type") and service_type:
            spec["type"] = service_type
        metadata = service.setdefault("metadata", {})
        metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **_annotations(rayservice)}
        metadata["name"] = metadata.get("name") or serve_service_name(owner_name)
    else:
        spec = {"selector": selector, "ports": ports}
        if service_type:
            spec["type"] = service_type
        service = {
            "metadata": {
                "name": serve_service_name(owner_name),
                "labels": labels,
                "annotations": _annotations(rayservice),
            },
            "spec": spec,
        }
    service["metadata"]["namespace"] = rayservice.metadata.namespace
    return {"apiVersion": "v1", "kind": "Service", **service}


def serve_service_manifest(rayservice: RayService, cluster: RayCluster, incremental: bool) -> dict[str, Any]:
    """The RayService's serve Service pointing at `cluster`: `<rs>-serve-svc` (or spec.serveService),
    selecting Pods with ray.io/serve=true. With an incremental upgrade KubeRay names it after the cluster
    instead (`<rc>-serve-svc`) and ignores spec.serveService. Raises MissingServePortError without a serve
    port."""
    return _serve_service(rayservice, cluster, per_cluster=incremental)


def per_cluster_serve_service_manifest(rayservice: RayService, cluster: RayCluster) -> dict[str, Any]:
    """`<rc>-serve-svc`, the HTTPRoute backend of one cluster, owned by that RayCluster (garbage-collected
    with it). Created once, never updated."""
    service = _serve_service(rayservice, cluster, per_cluster=True)
    if cluster.metadata.uid:
        service["metadata"]["ownerReferences"] = [
            {
                "apiVersion": RAY_API_VERSION,
                "kind": KIND_RAYCLUSTER,
                "name": cluster.metadata.name,
                "uid": cluster.metadata.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return service


def per_cluster_serve_service_to_create(
    rayservice: RayService, cluster: RayCluster | None, existing: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """reconcilePerClusterServeService: the Service to create, or None (no cluster, or it already exists; it
    is never updated)."""
    if cluster is None or existing is not None:
        return None
    return per_cluster_serve_service_manifest(rayservice, cluster)


def cluster_name_from_service(service: Mapping[str, Any] | None) -> str:
    """GetRayClusterNameFromService: the selector's ray.io/cluster ("" when absent)."""
    if not service:
        return ""
    selector = (service.get("spec") or {}).get("selector") or {}
    return str(selector.get(LABEL_CLUSTER, ""))


def should_update_service(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """reconcileServices: an existing Service is updated only when it must follow another RayCluster."""
    return cluster_name_from_service(existing) != cluster_name_from_service(desired)


def service_update(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The existing Service with the desired spec; clusterIP is immutable, so the old one is kept."""
    updated = copy.deepcopy(dict(existing))
    spec = copy.deepcopy(dict(desired.get("spec") or {}))
    old_cluster_ip = (existing.get("spec") or {}).get("clusterIP")
    if old_cluster_ip is not None:
        spec["clusterIP"] = old_cluster_ip
    else:
        spec.pop("clusterIP", None)
    updated["spec"] = spec
    return updated


def services_target_cluster(
    active_ready: bool, pending_ready: bool, incremental_upgrade_in_progress: bool
) -> Literal["active", "pending"] | None:
    """Which cluster the RayService-level Services point at this pass (None: leave them as they are).

    The pending cluster once it is ready, except during an incremental upgrade (the Gateway shifts traffic
    there); otherwise the active cluster when either is ready.
    """
    if not (active_ready or pending_ready):
        return None
    if pending_ready and not incremental_upgrade_in_progress:
        return "pending"
    return "active"


def head_pod_serve_label(exclude_head_pod_from_serve_svc: bool, proxy_healthy: bool) -> str:
    """updateHeadPodServeLabel: ray.io/serve on the head Pod. "false" when the head is excluded from the serve
    Service, else whether its Serve proxy answered GET /-/healthz with 200. Update the Pod only on change."""
    if exclude_head_pod_from_serve_svc:
        return "false"
    return "true" if proxy_healthy else "false"


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
