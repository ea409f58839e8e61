"""The fake activities of the fake world's shared Gateways and user-owned HTTPRoutes
(`raypilot.testing.rayservice_shared_objects`), registered under the real names: the workflow only reads them
and JSON-patches a route (all or nothing, as an API server does), and waits on them across namespaces."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from temporalio import activity

from raypilot.testing.json_patch import PatchRefused, apply_json_patch
from wire import names
from wire.kubernetes import GatewayObservation, ObjectKey, PatchRoute, RoutePatched, WaitGateway
from wire.views import gateway_view
from workflows.decisions.rayservice.upgrade.gateway import is_gateway_ready, is_http_route_ready

if TYPE_CHECKING:
    from raypilot.testing.rayservice_world_state import FakeRayWorldState

__all__ = ["fake_shared_route_activities", "shared_wait"]


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
