"""The Kubernetes resources raypilot touches, their REST paths, and the trimmed JSON activities hand back.

Activity results land in workflow history, so they carry what the workflows decide on and nothing more:
never `managedFields`, never Secret data, a Pod without its spec, a Job without its pod template.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def prefix(self) -> str:
        return f"/apis/{self.api_version}" if "/" in self.api_version else f"/api/{self.api_version}"

    def path(self, namespace: str | None, name: str | None = None, subresource: str | None = None) -> str:
        """`/apis/ray.io/v1/namespaces/ns/rayclusters[/name[/sub]]` (namespace None: all namespaces)."""
        parts = [self.prefix]
        if self.namespaced and namespace is not None:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=":"))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def describe(self, namespace: str | None, name: str | None = None) -> str:
        """How error messages name an object: `rayclusters "x" in namespace "ns"`."""
        target = f'{self.plural} "{name}"' if name else self.plural
        return f'{target} in namespace "{namespace}"' if self.namespaced and namespace else target


RAYCLUSTER: Final = Resource("ray.io/v1", "RayCluster", "rayclusters")
RAYJOB: Final = Resource("ray.io/v1", "RayJob", "rayjobs")
RAYSERVICE: Final = Resource("ray.io/v1", "RayService", "rayservices")
# raypilot's own kinds (`raypilot controller`): only the RayJob's DeleteSelf rule deletes one.
RAYPILOT_RAYJOB: Final = Resource("raypilot.io/v1", "RayJob", "rayjobs")
RAYPILOT_RAYSERVICE: Final = Resource("raypilot.io/v1", "RayService", "rayservices")
SERVICE: Final = Resource("v1", "Service", "services")
POD: Final = Resource("v1", "Pod", "pods")
EVENT: Final = Resource("v1", "Event", "events")
SECRET: Final = Resource("v1", "Secret", "secrets")
ENDPOINT_SLICE: Final = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices")
JOB: Final = Resource("batch/v1", "Job", "jobs")
GATEWAY: Final = Resource("gateway.networking.k8s.io/v1", "Gateway", "gateways")
HTTPROUTE: Final = Resource("gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes")
NAMESPACE: Final = Resource("v1", "Namespace", "namespaces", namespaced=False)

RESOURCES_BY_KIND: Final = {
    resource.kind: resource
    for resource in (
        RAYCLUSTER,
        RAYJOB,
        RAYSERVICE,
        SERVICE,
        POD,
        EVENT,
        ENDPOINT_SLICE,
        JOB,
        GATEWAY,
        HTTPROUTE,
    )
}

_METADATA_KEPT: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
)


# How an activity cuts an object down to what its workflow reads (trim_object, trim_job, trim_pod).
Trim = Callable[[Mapping[str, Any]], dict[str, Any]]


def trim_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: copy.deepcopy(value) for key, value in (metadata or {}).items() if key in _METADATA_KEPT}


def trim_object(obj: Mapping[str, Any], *, spec: bool = True, status: bool = True) -> dict[str, Any]:
    """apiVersion, kind, trimmed metadata, and spec/status when asked for."""
    trimmed: dict[str, Any] = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": trim_metadata(obj.get("metadata")),
    }
    if spec and "spec" in obj:
        trimmed["spec"] = copy.deepcopy(obj["spec"])
    if status and "status" in obj:
        trimmed["status"] = copy.deepcopy(obj["status"])
    return trimmed


def trim_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """A batch/v1 Job: metadata, status, and its spec without the pod template (the submitter command is the
    workflow's own and can be long)."""
    trimmed = trim_object(job, spec=False)
    spec = job.get("spec") or {}
    trimmed["spec"] = {key: copy.deepcopy(value) for key, value in spec.items() if key != "template"}
    return trimmed


_POD_STATUS_KEPT: Final = (
    "phase",
    "podIP",
    "conditions",
    "containerStatuses",
    "startTime",
    "reason",
    "message",
)


def trim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A Pod: metadata, restartPolicy and container names, and the status parts health decisions read."""
    trimmed = trim_object(pod, spec=False, status=False)
    spec = pod.get("spec") or {}
    trimmed["spec"] = {
        "restartPolicy": spec.get("restartPolicy"),
        "containers": [{"name": c.get("name")} for c in spec.get("containers") or []],
    }
    status = pod.get("status") or {}
    trimmed["status"] = {key: copy.deepcopy(status[key]) for key in _POD_STATUS_KEPT if key in status}
    return trimmed


def object_ref(obj: Mapping[str, Any]) -> dict[str, str]:
    """kind/namespace/name/uid of an object, for listings."""
    metadata = obj.get("metadata") or {}
    return {
        "apiVersion": str(obj.get("apiVersion") or ""),
        "kind": str(obj.get("kind") or ""),
        "namespace": str(metadata.get("namespace") or ""),
        "name": str(metadata.get("name") or ""),
        "uid": str(metadata.get("uid") or ""),
    }
