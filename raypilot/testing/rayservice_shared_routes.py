"""The fake world's shared Gateways and user-owned HTTPRoutes (`raypilot.io/gateway`,
`raypilot.io/httproute`): objects a platform team or a RayService's users made, in namespaces of their own,
which the workflow only reads and (the route) JSON-patches. A route's parent status is computed as a Gateway
controller would: Accepted and ResolvedRefs for each parent Gateway that exists and admits the route's
namespace, not Accepted otherwise.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from temporalio import activity

from raypilot.testing.json_patch import PatchRefused, apply_json_patch
from wire import names
from wire.kubernetes import GatewayObservation, ObjectKey, PatchRoute, RoutePatched, WaitGateway
from wire.views import gateway_view
from workflows.decisions.rayservice.upgrade.gateway import is_gateway_ready, is_http_route_ready
from workflows.decisions.rayservice.upgrade.shared_gateway import listener_admits

if TYPE_CHECKING:
    from raypilot.testing.rayservice_world_state import FakeRayWorldState

__all__ = ["SharedObjects", "fake_shared_route_activities", "shared_wait"]

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


def shared_wait(world: FakeRayWorldState, request: WaitGateway) -> GatewayObservation:
    """The Gateway wait across namespaces: the view of the shared Gateway and the route on it (a user's, or
    raypilot's own `<rs>-httproute`), with generations and namespace labels, as the real wait makes it."""
    shared = world.shared
    gateway_key = (request.gateway_namespace or request.namespace, request.gateway_name)
    route_key = (request.route_namespace or request.namespace, request.route_name or "")
    gateway = copy.deepcopy(shared.gateways.get(gateway_key))
    route = shared.route(route_key)
    if route is None and world.route is not None and world.route["metadata"]["name"] == route_key[1]:
        route = copy.deepcopy(world.route)
        route["status"] = shared.parents_status(route)
    ready = is_gateway_ready(gateway) and is_http_route_ready(gateway_key[1], gateway_key[0], route)
    view = gateway_view(gateway, route, ready)
    view["generations"] = [((obj or {}).get("metadata") or {}).get("generation") for obj in (gateway, route)]
    labels = None
    if request.namespace_labels_of:
        labels = copy.deepcopy(shared.namespace_labels.get(request.namespace_labels_of))
        view["namespace_labels"] = labels
    if view != request.last_view:
        return GatewayObservation(gateway, route, ready, view, labels)
    raise world._unchanged()


def _owned_weights(route: dict[str, Any]) -> dict[str, int]:
    return {
        str(ref["name"]): int(ref.get("weight", 1))
        for rule in route["spec"].get("rules") or []
        for ref in rule.get("backendRefs") or []
        if str(ref.get("name", "")).endswith("-serve-svc")
    }


def fake_shared_route_activities(world: FakeRayWorldState) -> list[Any]:
    shared = world.shared

    @activity.defn(name=names.GET_GATEWAY)
    async def get_gateway(key: ObjectKey) -> dict[str, Any] | None:
        found = shared.gateways.get((key.namespace, key.name))
        if found is None and world.gateway is not None and world.gateway["metadata"]["name"] == key.name:
            found = world.gateway
        return copy.deepcopy(found)

    @activity.defn(name=names.PATCH_HTTPROUTE)
    async def patch_httproute(request: PatchRoute) -> RoutePatched:
        key = (request.namespace, request.name)
        current = shared.routes.get(key)
        if current is None:
            shared.patches.append((*key, request.patch, False))
            return RoutePatched(None, applied=False)
        try:
            patched = apply_json_patch(current, request.patch)
        except PatchRefused:
            shared.patches.append((*key, request.patch, False))
            return RoutePatched(shared.route(key), applied=False)
        if patched["spec"] != current["spec"]:
            patched["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
        shared.routes[key] = patched
        shared.patches.append((*key, request.patch, True))
        world._record("patch", "HTTPRoute", request.name, _owned_weights(patched))
        return RoutePatched(shared.route(key), applied=True)

    @activity.defn(name=names.GET_NAMESPACE_LABELS)
    async def get_namespace_labels(namespace: str) -> dict[str, str] | None:
        return copy.deepcopy(shared.namespace_labels.get(namespace))

    return [get_gateway, patch_httproute, get_namespace_labels]
