"""Parsing Kubernetes REST paths (`/api/v1/namespaces/ns/pods/name/status`) into what they address."""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.resources import ResourceType
from sandbox.store import Store


@dataclass(frozen=True)
class ResourcePath:
    rt: ResourceType
    namespace: str | None  # None: all namespaces (lists) or a cluster-scoped resource
    name: str | None  # None: the collection
    subresource: str | None = None  # "status", "proxy"
    rest: str = ""  # for proxy: the path after ".../proxy", with its leading "/"

    @property
    def resource(self) -> str:
        """`pods` or `pods/status`: how RBAC (and the fault injector) names what is addressed."""
        return f"{self.rt.plural}/{self.subresource}" if self.subresource else self.rt.plural


class UnknownPath(LookupError):
    """Not a path of any served resource."""


def parse_resource_path(store: Store, path: str) -> ResourcePath:
    """Resolve a resource path; raises UnknownPath for discovery or unknown paths."""
    parts = path.strip("/").split("/")
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise UnknownPath(path)
    namespace: str | None = None
    # namespaces/<ns>/<plural>... addresses namespaced objects; namespaces[/<name>[/<sub>]] the Namespaces.
    if len(rest) >= 3 and rest[0] == "namespaces" and store.resource_type_for_plural(group, version, rest[2]):
        namespace, rest = rest[1], rest[2:]
    rt = store.resource_type_for_plural(group, version, rest[0])
    if rt is None or (namespace is not None and not rt.namespaced):
        raise UnknownPath(path)
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) >= 3 else None
    if subresource is not None and subresource not in rt.subresources:
        raise UnknownPath(path)
    if len(rest) > 3 and subresource != "proxy":
        raise UnknownPath(path)
    tail = "/" + "/".join(rest[3:]) if subresource == "proxy" and len(rest) > 3 else ""
    if subresource == "proxy" and path.endswith("/") and not tail.endswith("/"):
        tail += "/"
    if rt.namespaced and name is not None and namespace is None:
        raise UnknownPath(path)  # a namespaced object needs its namespace in the path
    return ResourcePath(rt, namespace, name, subresource, tail)
