"""How a RayJob reaches its cluster's dashboard: the URL, the target the dashboard activities take, and
the RayJob's own head Service.

KubeRay counterparts: `utils.FetchHeadServiceURL`, `common.BuildHeadServiceForRayJob`. Where raypilot differs:
the dashboard URL is read from the RayCluster's status (`head.serviceName` and `endpoints.dashboard`, which
KubeRay's RayCluster controller copies from that same head Service) when it is there, saving a read of the
Service; the head Service carries raypilot's ownership marks (contract section 5).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from models.naming import (
    DEFAULT_CLIENT_PORT,
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_GCS_SERVER_PORT,
    DEFAULT_METRICS_PORT,
    DEFAULT_SERVE_PORT,
    KIND_RAYJOB,
    LABEL_CLUSTER,
    LABEL_IDENTIFIER,
    LABEL_NODE_TYPE,
    head_identifier,
    head_service_name,
    ownership_labels,
    workflow_annotations,
)
from models.raycluster import RayClusterSpec, RayClusterStatus
from models.rayjob import RayJob
from wire.dashboard import DashboardTarget
from workflows.decisions.rayjob.cluster import cluster_head_service_name


def dashboard_url_from_cluster_status(
    cluster_status: RayClusterStatus, namespace: str, cluster_domain: str
) -> str | None:
    """status.dashboardURL ("<svc>.<ns>.svc.<domain>:<port>") from a RayCluster's status, None when the status
    does not name the head Service and its dashboard port (then the Service itself must be read)."""
    service = cluster_status.head.service_name
    port = cluster_status.endpoints.get("dashboard", "")
    if not service or not port.isdigit():
        return None
    return f"{service}.{namespace}.svc.{cluster_domain}:{port}"


def _dashboard_port(dashboard_url: str) -> int:
    _, _, port = dashboard_url.rpartition(":")
    return int(port) if port.isdigit() else DEFAULT_DASHBOARD_PORT


def dashboard_target(job: RayJob, cluster_spec: RayClusterSpec) -> DashboardTarget:
    """How the activities reach this attempt's Ray dashboard: the cluster's head Service (for the API
    server's proxy), status.dashboardURL (direct), and the token Secret when the cluster uses token auth."""
    status = job.status
    cluster_name = status.ray_cluster_name
    return DashboardTarget(
        namespace=job.metadata.namespace,
        head_service=cluster_head_service_name(cluster_name, cluster_spec),
        dashboard_url=status.dashboard_url,
        dashboard_port=_dashboard_port(status.dashboard_url),
        **DashboardTarget.token_fields(cluster_name, cluster_spec),
    )


_DEFAULT_HEAD_PORTS: Final[Mapping[str, int]] = {
    "client": DEFAULT_CLIENT_PORT,
    "gcs-server": DEFAULT_GCS_SERVER_PORT,
    "dashboard": DEFAULT_DASHBOARD_PORT,
    "metrics": DEFAULT_METRICS_PORT,
    "serve": DEFAULT_SERVE_PORT,
}


def _head_ports(cluster_spec: RayClusterSpec) -> dict[str, int]:
    containers = cluster_spec.head_group_spec.template.spec.containers
    ports = {
        (port.name or f"{port.container_port}-port"): port.container_port
        for port in (containers[0].ports if containers else [])
    }
    ports = ports or dict(_DEFAULT_HEAD_PORTS)
    ports.setdefault("metrics", DEFAULT_METRICS_PORT)
    return ports


def rayjob_head_service_manifest(
    job: RayJob,
    cluster_name: str,
    cluster_spec: RayClusterSpec,
    *,
    workflow_id: str,
    cluster_ip_service: bool = False,
) -> dict[str, Any]:
    """`<rayjob>-head-svc`, the RayJob's stable address of its current cluster's head (KubeRay's
    BuildHeadServiceForRayJob): the head container's ports (the defaults when it declares none, plus
    metrics), headless for ClusterIP unless `cluster_ip_service` (ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE)."""
    name = job.metadata.name
    head_group = cluster_spec.head_group_spec
    selector = {LABEL_CLUSTER: cluster_name, LABEL_NODE_TYPE: "head"}
    ports = [
        {"name": port_name, "port": number, "appProtocol": "tcp"}
        for port_name, number in sorted(_head_ports(cluster_spec).items())
    ]
    service: dict[str, Any] = copy.deepcopy(head_group.head_service) if head_group.head_service else {}
    spec = service.setdefault("spec", {})
    spec["selector"] = selector
    spec["ports"] = list(spec.get("ports") or []) + ports
    if not spec.get("type") and head_group.service_type:
        spec["type"] = head_group.service_type
    if (
        head_group.head_service is None
        and not cluster_ip_service
        and spec.get("type", "ClusterIP") == "ClusterIP"
    ):
        spec["clusterIP"] = "None"
        spec["publishNotReadyAddresses"] = True
    metadata = service.setdefault("metadata", {})
    metadata["name"] = head_service_name(name)
    metadata["namespace"] = job.metadata.namespace
    metadata["labels"] = {
        **ownership_labels(KIND_RAYJOB, name),
        LABEL_NODE_TYPE: "head",
        LABEL_IDENTIFIER: head_identifier(name),
    }
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **workflow_annotations(workflow_id)}
    return {"apiVersion": "v1", "kind": "Service", **service}
