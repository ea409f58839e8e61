"""The RayJob workflow's remaining small decisions: what it tells Kubernetes in Events, how it reads the
dashboard's answers and the RayCluster's status, the RayJob's own head Service, what an `apply` changes,
how long to back off after a failed act, and what the Web UI shows.

KubeRay counterparts (rayjob_controller.go): the `Recorder.Eventf` calls of `getOrCreateRayClusterInstance`,
`createNewK8sJob`, `deleteSubmitterJob`, `deleteClusterResources`, `suspendWorkerGroups` and
`reconcileServices`; `utils.FetchHeadServiceURL`; `common.BuildHeadServiceForRayJob`; the `GetJobInfo` answer
handling of the Running branch.

Where raypilot differs: the dashboard URL is read from the RayCluster's status (`head.serviceName` and
`endpoints.dashboard`, which KubeRay's RayCluster controller copies from that same head Service) when it is
there, saving a read of the Service; the head Service carries raypilot's ownership marks (contract section 5).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any, Final, Literal

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
from models.rayjob import JobStatus, RayJob, RayJobStatus
from wire.dashboard import DashboardTarget, JobInfoAnswer, auth_secret_name
from workflows.decisions.rayjob.cluster import cluster_head_service_name
from workflows.decisions.rayjob.observations import (
    JobInfo,
    JobInfoResult,
    JobInfoUnavailable,
    JobNotFound,
)

__all__ = [
    "EVENT_LOG_SIZE",
    "EventReason",
    "RayJobEvent",
    "applied_job",
    "dashboard_target",
    "dashboard_url_from_cluster_status",
    "failure_backoff",
    "is_spec_changed",
    "job_info_result",
    "phase_details",
    "rayjob_event",
    "rayjob_head_service_manifest",
]

EVENT_LOG_SIZE: Final = 50
EventType = Literal["Normal", "Warning"]


class EventReason(StrEnum):
    """KubeRay's event reasons for a RayJob (utils/constant.go)."""

    CREATED_RAYCLUSTER = "CreatedRayCluster"
    FAILED_TO_CREATE_RAYCLUSTER = "FailedToCreateRayCluster"
    DELETED_RAYCLUSTER = "DeletedRayCluster"
    FAILED_TO_DELETE_RAYCLUSTER = "FailedToDeleteRayCluster"
    UPDATED_RAYCLUSTER = "UpdatedRayCluster"
    FAILED_TO_UPDATE_RAYCLUSTER = "FailedToUpdateRayCluster"
    RAYCLUSTER_NOT_FOUND = "RayClusterNotFound"
    CREATED_RAYJOB_SUBMITTER = "CreatedRayJobSubmitter"
    FAILED_TO_CREATE_RAYJOB_SUBMITTER = "FailedToCreateRayJobSubmitter"
    DELETED_RAYJOB_SUBMITTER = "DeletedRayJobSubmitter"
    FAILED_TO_DELETE_RAYJOB_SUBMITTER = "FailedToDeleteRayJobSubmitter"
    CREATED_SERVICE = "CreatedService"
    FAILED_TO_CREATE_SERVICE = "FailedToCreateService"


# (type, message format with {ns}, {name} and {error}) as KubeRay writes them.
_EVENTS: Final[Mapping[EventReason, tuple[EventType, str]]] = {
    EventReason.CREATED_RAYCLUSTER: ("Normal", "Created RayCluster {ns}/{name}"),
    EventReason.FAILED_TO_CREATE_RAYCLUSTER: ("Warning", "Failed to create RayCluster {ns}/{name}: {error}"),
    EventReason.DELETED_RAYCLUSTER: ("Normal", "Deleted cluster {ns}/{name}"),
    EventReason.FAILED_TO_DELETE_RAYCLUSTER: ("Warning", "Failed to delete cluster {ns}/{name}: {error}"),
    EventReason.UPDATED_RAYCLUSTER: (
        "Normal",
        "Set the `suspend` field to true for all worker groups in cluster {ns}/{name}",
    ),
    EventReason.FAILED_TO_UPDATE_RAYCLUSTER: (
        "Warning",
        "Failed to suspend worker groups in cluster {ns}/{name}: {error}",
    ),
    EventReason.RAYCLUSTER_NOT_FOUND: (
        "Warning",
        "RayCluster {ns}/{name} set in the clusterSelector is not found. It must be created manually",
    ),
    EventReason.CREATED_RAYJOB_SUBMITTER: ("Normal", "Created Kubernetes Job {ns}/{name}"),
    EventReason.FAILED_TO_CREATE_RAYJOB_SUBMITTER: (
        "Warning",
        "Failed to create new Kubernetes Job {ns}/{name}: {error}",
    ),
    EventReason.DELETED_RAYJOB_SUBMITTER: ("Normal", "Deleted submitter K8s Job {ns}/{name}"),
    EventReason.FAILED_TO_DELETE_RAYJOB_SUBMITTER: (
        "Warning",
        "Failed to delete submitter K8s Job {ns}/{name}: {error}",
    ),
    EventReason.CREATED_SERVICE: ("Normal", "Created the service {ns}/{name}"),
    EventReason.FAILED_TO_CREATE_SERVICE: ("Warning", "Failed to create the service {ns}/{name}, {error}"),
}


@dataclass(frozen=True)
class RayJobEvent:
    """A Kubernetes Event on the RayJob: its type, KubeRay's reason and message."""

    type: EventType
    reason: EventReason
    message: str


def rayjob_event(reason: EventReason, namespace: str, name: str, error: str = "") -> RayJobEvent:
    """The Event KubeRay records for `reason` about the object `namespace/name` (a RayCluster, the submitter
    Job or the head Service); `error` fills the failure events' last part."""
    event_type, message = _EVENTS[reason]
    return RayJobEvent(event_type, reason, message.format(ns=namespace, name=name, error=error))


def job_info_result(answer: JobInfoAnswer) -> JobInfoResult:
    """The dashboard's answer to GET /api/jobs/<id> as the Running decision reads it. A status Ray does not
    define counts as a failed status check."""
    if answer.outcome == "not_found":
        return JobNotFound()
    if answer.outcome == "found":
        try:
            status = JobStatus(answer.status)
        except ValueError:
            return JobInfoUnavailable(f"GetJobInfo fail: unknown job status {answer.status!r}")
        if status != JobStatus.NEW:
            return JobInfo(status, answer.message, answer.start_time_ms, answer.end_time_ms)
        return JobInfoUnavailable("GetJobInfo fail: empty job status")
    return JobInfoUnavailable(answer.error)


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
        auth_secret=auth_secret_name(cluster_name, cluster_spec),
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


def is_spec_changed(current: RayJob, applied: RayJob) -> bool:
    """Whether an `apply` changes the spec (Kubernetes bumps metadata.generation only then)."""
    return current.spec != applied.spec


def applied_job(current: RayJob, applied: RayJob) -> RayJob:
    """The RayJob after an accepted `apply`: the applied spec, labels and annotations; the workflow's own
    status (any status in the manifest is ignored: the workflow writes it)."""
    metadata = current.metadata.model_copy(
        update={"labels": dict(applied.metadata.labels), "annotations": dict(applied.metadata.annotations)}
    )
    return current.model_copy(update={"spec": applied.spec, "metadata": metadata})


_BACKOFF_FIRST: Final = timedelta(seconds=10)
_BACKOFF_MAX: Final = timedelta(minutes=5)


def failure_backoff(consecutive_failures: int) -> timedelta:
    """How long to wait before trying again after a failed act (its activity exhausted its retries or was
    rejected for good): 10 s doubling to at most 5 min, as a controller's rate-limited requeue would."""
    if consecutive_failures <= 1:
        return _BACKOFF_FIRST
    delay: timedelta = _BACKOFF_FIRST * 2 ** min(consecutive_failures - 1, 10)
    return min(delay, _BACKOFF_MAX)


def phase_details(status: RayJobStatus) -> str:
    """The Web UI's current details: phase, Ray job id and cluster (markdown)."""
    phase = status.job_deployment_status.value or "New"
    parts = [f"**{phase}**"]
    if status.job_status:
        parts.append(f"job status {status.job_status.value}")
    if status.job_id:
        parts.append(f"job id `{status.job_id}`")
    if status.ray_cluster_name:
        parts.append(f"cluster `{status.ray_cluster_name}`")
    if status.reason is not None:
        parts.append(f"reason {status.reason.value}")
    return " · ".join(parts)
