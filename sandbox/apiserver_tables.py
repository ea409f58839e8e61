"""Server-side printing: `meta.k8s.io/v1 Table` responses, so `kubectl get` shows the usual columns
(READY/STATUS for pods, CLUSTER-IP for services, KubeRay's columns for Ray kinds) instead of NAME/AGE only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sandbox.resources import ResourceType

TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"
Cell = Callable[[dict[str, Any]], Any]


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _at(obj: dict[str, Any], path: str, default: Any = "") -> Any:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return default if value is None else value


def human_duration(seconds: float) -> str:
    """Kubernetes' HumanDuration: coarser the older it is."""
    s = max(int(seconds), 0)
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


def _since(timestamp: str) -> str:
    if not timestamp:
        return "<unknown>"
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return human_duration((datetime.now(UTC) - then).total_seconds())


def _age(obj: dict[str, Any]) -> str:
    return _since(_at(obj, "metadata.creationTimestamp"))


def _condition(obj: dict[str, Any], kind: str) -> str:
    for condition in _at(obj, "status.conditions", []):
        if condition.get("type") == kind:
            return str(condition.get("status", "Unknown"))
    return "Unknown"


def _pod_status(pod: dict[str, Any]) -> str:
    if _at(pod, "metadata.deletionTimestamp"):
        return "Terminating"
    reason = _at(pod, "status.reason") or _at(pod, "status.phase", "Pending")
    for status in _at(pod, "status.containerStatuses", []):
        state = status.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated.get("reason"):
            reason = terminated["reason"]
    return str(reason)


def _pod_ready(pod: dict[str, Any]) -> str:
    statuses = _at(pod, "status.containerStatuses", [])
    ready = sum(1 for s in statuses if s.get("ready"))
    return f"{ready}/{len(_at(pod, 'spec.containers', []))}"


def _service_ports(svc: dict[str, Any]) -> str:
    ports = [f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in _at(svc, "spec.ports", [])]
    return ",".join(ports) or "<none>"


def _job_status(job: dict[str, Any]) -> str:
    for kind in ("Complete", "Failed", "Suspended"):
        if _condition(job, kind) == "True":
            return kind
    return "Running"


def _column(name: str, cell: Cell, *, kind: str = "string", priority: int = 0) -> tuple[dict[str, Any], Cell]:
    definition = {
        "name": name,
        "type": kind,
        "format": "name" if name == "Name" else "",
        "description": name,
        "priority": priority,
    }
    return definition, cell


def _name(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


_NAME = _column("Name", _name)
_AGE = _column("Age", _age)
_COLUMNS: dict[tuple[str, str], list[tuple[dict[str, Any], Cell]]] = {
    ("", "Pod"): [
        _NAME,
        _column("Ready", _pod_ready),
        _column("Status", _pod_status),
        _column(
            "Restarts",
            lambda p: sum(s.get("restartCount", 0) for s in _at(p, "status.containerStatuses", [])),
            kind="integer",
        ),
        _AGE,
        _column("IP", lambda p: _at(p, "status.podIP", "<none>"), priority=1),
    ],
    ("", "Service"): [
        _NAME,
        _column("Type", lambda s: _at(s, "spec.type", "ClusterIP")),
        _column("Cluster-IP", lambda s: _at(s, "spec.clusterIP", "<none>")),
        _column("External-IP", lambda s: "<none>"),
        _column("Port(s)", _service_ports),
        _AGE,
    ],
    ("", "Namespace"): [_NAME, _column("Status", lambda n: _at(n, "status.phase", "Active")), _AGE],
    ("", "ConfigMap"): [_NAME, _column("Data", lambda c: len(c.get("data") or {}), kind="integer"), _AGE],
    ("", "Secret"): [
        _NAME,
        _column("Type", lambda s: s.get("type", "Opaque")),
        _column("Data", lambda s: len(s.get("data") or {}), kind="integer"),
        _AGE,
    ],
    ("", "Event"): [
        _column(
            "Last Seen", lambda e: _since(e.get("lastTimestamp") or _at(e, "metadata.creationTimestamp"))
        ),
        _column("Type", lambda e: e.get("type", "")),
        _column("Reason", lambda e: e.get("reason", "")),
        _column(
            "Object", lambda e: f"{_at(e, 'involvedObject.kind').lower()}/{_at(e, 'involvedObject.name')}"
        ),
        _column("Message", lambda e: e.get("message", "")),
    ],
    ("batch", "Job"): [
        _NAME,
        _column("Status", _job_status),
        _column("Completions", lambda j: f"{_at(j, 'status.succeeded', 0)}/{_at(j, 'spec.completions', 1)}"),
        _AGE,
    ],
    ("ray.io", "RayCluster"): [
        _NAME,
        _column("Desired Workers", lambda c: _at(c, "status.desiredWorkerReplicas", 0), kind="integer"),
        _column("Available Workers", lambda c: _at(c, "status.availableWorkerReplicas", 0), kind="integer"),
        _column("CPUs", lambda c: _at(c, "status.desiredCPU")),
        _column("Memory", lambda c: _at(c, "status.desiredMemory")),
        _column("GPUs", lambda c: _at(c, "status.desiredGPU")),
        _column("Status", lambda c: _at(c, "status.state")),
        _AGE,
    ],
    ("ray.io", "RayJob"): [
        _NAME,
        _column("Job Status", lambda j: _at(j, "status.jobStatus")),
        _column("Deployment Status", lambda j: _at(j, "status.jobDeploymentStatus")),
        _column("Ray Cluster Name", lambda j: _at(j, "status.rayClusterName")),
        _column("Start Time", lambda j: _at(j, "status.startTime")),
        _column("End Time", lambda j: _at(j, "status.endTime")),
        _AGE,
    ],
    ("ray.io", "RayService"): [
        _NAME,
        _column("Service Status", lambda s: _at(s, "status.serviceStatus")),
        _column("Num Serve Endpoints", lambda s: _at(s, "status.numServeEndpoints")),
        _AGE,
    ],
    ("gateway.networking.k8s.io", "GatewayClass"): [
        _NAME,
        _column("Controller", lambda g: _at(g, "spec.controllerName")),
        _column("Accepted", lambda g: _condition(g, "Accepted")),
        _AGE,
    ],
    ("gateway.networking.k8s.io", "Gateway"): [
        _NAME,
        _column("Class", lambda g: _at(g, "spec.gatewayClassName")),
        _column("Address", lambda g: (_at(g, "status.addresses", []) or [{}])[0].get("value", "")),
        _column("Programmed", lambda g: _condition(g, "Programmed")),
        _AGE,
    ],
    ("gateway.networking.k8s.io", "HTTPRoute"): [
        _NAME,
        _column("Hostnames", lambda r: ",".join(_at(r, "spec.hostnames", [])) or ""),
        _AGE,
    ],
}


def _printer_cell(json_path: str, column_type: str) -> Cell:
    """A CRD's printer column: a simple `.a.b.c` JSONPath (all that raypilot's and KubeRay's CRDs use)."""
    path = json_path.lstrip(".")
    if column_type == "date":
        return lambda obj: _since(str(_at(obj, path)))
    return lambda obj: _at(obj, path)


def _columns_of(rt: ResourceType) -> list[tuple[dict[str, Any], Cell]]:
    if rt.printer_columns:
        return [_NAME] + [
            _column(name, _printer_cell(path, kind), kind=kind) for name, kind, path in rt.printer_columns
        ]
    return _COLUMNS.get((rt.group, rt.kind), [_NAME, _AGE])


def _row(rt: ResourceType, obj: dict[str, Any], include_object: str) -> dict[str, Any]:
    columns = _columns_of(rt)
    row: dict[str, Any] = {"cells": [cell(obj) for _, cell in columns]}
    if include_object == "Object":
        row["object"] = obj
    elif include_object != "None":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }
    return row


def table(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    resource_version: str,
    include_object: str = "Metadata",
    *,
    with_definitions: bool = True,
    continue_token: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    doc: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}
    if with_definitions:
        doc["columnDefinitions"] = [definition for definition, _ in _columns_of(rt)]
    doc["rows"] = [_row(rt, obj, include_object) for obj in objects]
    return doc
