"""The fake world's shared Gateways and user-owned HTTPRoutes (`raypilot.io/gateway`,
`raypilot.io/httproute`): objects a platform team or a RayService's users made, in namespaces of their own. A
route's parent status is computed as a Gateway controller would: Accepted and ResolvedRefs for each parent
Gateway that exists and admits the route's namespace, not Accepted otherwise. Their activities are in
`raypilot.testing.rayservice_shared_routes`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from workflows.decisions.rayservice.upgrade.shared_gateway import listener_admits

__all__ = ["SharedObjects"]

Key = tuple[str, str]
_READY_GATEWAY = [{"type": "Accepted", "status": "True"}, {"type": "Programmed", "status": "True"}]


@dataclass
class SharedObjects:
    gateways: dict[Key, dict[str, Any]] = field(default_factory=dict)
    routes: dict[Key, dict[str, Any]] = field(default_factory=dict)
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    # Each patch the workflow sent: (namespace, name, the ops, applied).
    patches: list[tuple[str, str, list[dict[str, Any]], bool]] = field(default_factory=list)

    def add_gateway(self, namespace: str, name: str, listeners: list[dict[str, Any]]) -> dict[str, Any]:
        gateway = {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"gatewayClassName": "shared", "listeners": listeners},
            "status": {"conditions": copy.deepcopy(_READY_GATEWAY)},
        }
        self.gateways[(namespace, name)] = gateway
        return gateway

    def add_route(self, route: dict[str, Any]) -> None:
        metadata = route["metadata"]
        metadata.setdefault("generation", 1)
        self.routes[(metadata["namespace"], metadata["name"])] = copy.deepcopy(route)

    def edit_gateway(self, namespace: str, name: str, listeners: list[dict[str, Any]]) -> None:
        """A platform team changes the listeners (a new generation)."""
        gateway = self.gateways[(namespace, name)]
        gateway["spec"]["listeners"] = listeners
        gateway["metadata"]["generation"] += 1

    def parents_status(self, route: dict[str, Any]) -> dict[str, Any]:
        route_ns = route["metadata"]["namespace"]
        parents = []
        for ref in (route.get("spec") or {}).get("parentRefs") or []:
            gateway_ns = ref.get("namespace") or route_ns
            gateway = self.gateways.get((gateway_ns, ref["name"]))
            labels = self.namespace_labels.get(route_ns, {"kubernetes.io/metadata.name": route_ns})
            admitted = gateway is not None and any(
                listener_admits(listener, gateway_ns, route_ns, labels)
                for listener in gateway["spec"].get("listeners") or []
            )
            value = "True" if admitted else "False"
            conditions = [{"type": "Accepted", "status": value}, {"type": "ResolvedRefs", "status": value}]
            parents.append(
                {"parentRef": {"name": ref["name"], "namespace": gateway_ns}, "conditions": conditions}
            )
        return {"parents": parents}

    def route(self, key: Key) -> dict[str, Any] | None:
        found = self.routes.get(key)
        if found is None:
            return None
        shown = copy.deepcopy(found)
        shown["status"] = self.parents_status(found)
        return shown
