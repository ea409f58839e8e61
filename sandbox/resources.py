"""The resource types the sandbox API serves, and the discovery documents that describe them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: frozenset[str]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # A custom resource's additionalPrinterColumns: (name, type, jsonPath); empty for built-in kinds.
    printer_columns: tuple[tuple[str, str, str], ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified_plural(self) -> str:
        """`rayclusters.ray.io`, as Kubernetes names a resource in its error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _rt(
    group: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    sub: tuple[str, ...] = ("status",),
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    version: str = "v1",
) -> ResourceType:
    return ResourceType(group, version, kind, plural, namespaced, frozenset(sub), short, categories)


SERVED_TYPES: tuple[ResourceType, ...] = (
    _rt("", "Namespace", "namespaces", namespaced=False, short=("ns",)),
    _rt("", "Pod", "pods", sub=("status", "proxy"), short=("po",), categories=("all",)),
    _rt("", "Service", "services", sub=("status", "proxy"), short=("svc",), categories=("all",)),
    _rt("", "Event", "events", sub=(), short=("ev",)),
    _rt("", "Secret", "secrets", sub=()),
    _rt("", "ConfigMap", "configmaps", sub=(), short=("cm",)),
    # Stored only, with no controller acting on them: the companions of KubeRay's sample manifests (a
    # submitter's ServiceAccount and RBAC, a Redis Deployment for GCS fault tolerance, Volcano's Queue), so
    # that such files apply here as on a cluster that has them.
    _rt("", "ServiceAccount", "serviceaccounts", sub=(), short=("sa",)),
    _rt("", "PersistentVolumeClaim", "persistentvolumeclaims", short=("pvc",)),
    _rt("apps", "Deployment", "deployments", short=("deploy",), categories=("all",)),
    _rt("rbac.authorization.k8s.io", "Role", "roles", sub=()),
    _rt("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", sub=()),
    _rt("scheduling.volcano.sh", "Queue", "queues", namespaced=False, version="v1beta1"),
    _rt("discovery.k8s.io", "EndpointSlice", "endpointslices", sub=()),
    _rt("batch", "Job", "jobs", categories=("all",)),
    _rt("ray.io", "RayCluster", "rayclusters", categories=("all",)),
    _rt("ray.io", "RayJob", "rayjobs", categories=("all",)),
    _rt("ray.io", "RayService", "rayservices", categories=("all",)),
    _rt("gateway.networking.k8s.io", "GatewayClass", "gatewayclasses", namespaced=False, short=("gc",)),
    _rt("gateway.networking.k8s.io", "Gateway", "gateways", short=("gtw",)),
    _rt("gateway.networking.k8s.io", "HTTPRoute", "httproutes"),
    _rt("coordination.k8s.io", "Lease", "leases", sub=()),
    # Applying one serves a new kind (sandbox/store_crds.py): raypilot.io's RayJob and RayService.
    _rt(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        namespaced=False,
        short=("crd", "crds"),
    ),
)


def group_versions(types: tuple[ResourceType, ...] = SERVED_TYPES) -> dict[str, list[str]]:
    """Named API groups (core excluded) and their versions, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for rt in types:
        if rt.group and rt.version not in groups.setdefault(rt.group, []):
            groups[rt.group].append(rt.version)
    return groups


def api_versions_doc() -> dict[str, Any]:
    """GET /api"""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def api_group_list_doc(types: tuple[ResourceType, ...] = SERVED_TYPES) -> dict[str, Any]:
    """GET /apis"""
    groups = []
    for group, versions in group_versions(types).items():
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group_doc(group: str, types: tuple[ResourceType, ...] = SERVED_TYPES) -> dict[str, Any] | None:
    """GET /apis/<group>"""
    versions = group_versions(types).get(group)
    if not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def _resource_entries(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(_ALL_VERBS),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    entries = [main]
    for sub in sorted(rt.subresources):
        verbs = (
            ["get", "patch", "update"] if sub == "status" else ["create", "delete", "get", "patch", "update"]
        )
        entries.append(
            {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": verbs,
            }
        )
    return entries


def api_resource_list_doc(
    group: str, version: str, types: tuple[ResourceType, ...] = SERVED_TYPES
) -> dict[str, Any] | None:
    """GET /api/v1 or /apis/<group>/<version>"""
    matching = [rt for rt in types if rt.group == group and rt.version == version]
    if not matching:
        return None
    resources = [entry for rt in matching for entry in _resource_entries(rt)]
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _path_for(rt: ResourceType) -> str:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else "/api/v1"
    scope = "/namespaces/{namespace}" if rt.namespaced else ""
    return f"{prefix}{scope}/{rt.plural}/{{name}}"


def openapi_v3_root_doc(types: tuple[ResourceType, ...] = SERVED_TYPES) -> dict[str, Any]:
    """GET /openapi/v3: where each group version's document is."""
    paths = {}
    for rt in types:
        relative = f"apis/{rt.group}/{rt.version}" if rt.group else "api/v1"
        paths[relative] = {"serverRelativeURL": f"/openapi/v3/{relative}?hash=sandbox"}
    return {"paths": paths}


def openapi_v3_group_version_doc(
    group: str, version: str, types: tuple[ResourceType, ...] = SERVED_TYPES
) -> dict[str, Any] | None:
    """A minimal OpenAPI v3 document for one group version: no schemas, only the PATCH operations with the
    `fieldValidation` parameter, which is what kubectl looks for to validate on the server side instead of
    downloading schemas to validate on the client side."""
    matching = [rt for rt in types if rt.group == group and rt.version == version]
    if not matching:
        return None
    paths = {
        _path_for(rt): {
            "patch": {
                "operationId": f"patch{rt.kind}",
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": rt.group,
                    "version": rt.version,
                    "kind": rt.kind,
                },
                "parameters": [
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
            }
        }
        for rt in matching
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (raypilot sandbox)", "version": "v1.36.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }
