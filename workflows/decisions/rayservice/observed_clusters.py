"""What the RayService workflow reads of its RayClusters: their names in the status, the cluster an
observed object is, whether its head Pod is ready, its dashboard port and head Service, and which
observations to forget."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from models.meta import is_condition_true
from models.naming import DEFAULT_DASHBOARD_PORT, DEFAULT_METRICS_PORT, head_service_name
from models.raycluster import RayCluster, RayClusterConditionType
from models.rayservice import RayService, RayServiceStatuses


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


def metrics_port_of(cluster: Mapping[str, Any] | None) -> int:
    """The head's `metrics-export-port` start parameter (KubeRay's default 8080 when unset)."""
    params = (((cluster or {}).get("spec") or {}).get("headGroupSpec") or {}).get("rayStartParams") or {}
    raw = str(params.get("metrics-export-port") or "")
    return int(raw) if raw.isdigit() else DEFAULT_METRICS_PORT


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


def parsed_cluster(obj: Mapping[str, Any]) -> RayCluster | None:
    """A RayCluster object as read from the cluster, as the model the decisions take; None when its spec has
    fields the model does not know."""
    try:
        return RayCluster.model_validate(
            {key: obj[key] for key in ("apiVersion", "kind", "metadata", "spec", "status") if key in obj}
        )
    except ValidationError:
        return None


def cluster_from_object(obj: Mapping[str, Any] | None, fallback: RayService) -> RayCluster | None:
    """A RayCluster object as read from the cluster, as the model the decisions take. A spec the model does
    not know (fields defaulted by a newer CRD) is replaced by the RayService's cluster spec, which is what
    the workflow wrote; metadata (the hash annotations) and status are kept."""
    if obj is None:
        return None
    parsed = parsed_cluster(obj)
    if parsed is not None:
        return parsed
    return RayCluster.model_validate(
        {
            "metadata": obj.get("metadata") or {},
            "spec": fallback.spec.ray_cluster_config.model_dump(by_alias=True, exclude_unset=True),
            "status": obj.get("status") or {},
        }
    )
