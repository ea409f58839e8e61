"""Gateway API activities (gateway.networking.k8s.io/v1 Gateway and HTTPRoute) for incremental upgrades.

raypilot owns the spec of `<rs>-gateway` and `<rs>-httproute`; their status belongs to the Gateway
controller, so updates replace the spec on a fresh read (conflicts retried) and never write status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from activities.kubernetes.clusters import KubernetesActivityBase
from activities.kubernetes.resources import GATEWAY, HTTPROUTE, trim_object
from wire import stubs
from wire.kubernetes import CreateObject, DeleteObject, ObjectKey, UpdateSpec
from wire.stubs.common import implements


def _condition_true(conditions: Sequence[Mapping[str, Any]] | None, condition_type: str) -> bool:
    return any(c.get("type") == condition_type and c.get("status") == "True" for c in conditions or [])


def gateway_ready(gateway: Mapping[str, Any] | None) -> bool:
    """Accepted and Programmed, as KubeRay judges a Gateway."""
    if not gateway:
        return False
    conditions = (gateway.get("status") or {}).get("conditions")
    return _condition_true(conditions, "Accepted") and _condition_true(conditions, "Programmed")


def route_ready(route: Mapping[str, Any] | None, gateway_name: str, namespace: str) -> bool:
    """The route's status entry for our Gateway says Accepted and ResolvedRefs (KubeRay's
    IsHTTPRouteReady)."""
    if not route:
        return False
    for parent in (route.get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gateway_name or (ref.get("namespace") or namespace) != namespace:
            continue
        conditions = parent.get("conditions")
        if _condition_true(conditions, "Accepted") and _condition_true(conditions, "ResolvedRefs"):
            return True
    return False


class GatewayActivities(KubernetesActivityBase):
    @implements(stubs.create_gateway)
    def create_gateway(self, request: CreateObject) -> dict[str, Any]:
        return trim_object(self._create(GATEWAY, request))

    @implements(stubs.get_gateway)
    def get_gateway(self, key: ObjectKey) -> dict[str, Any] | None:
        return self._get_trimmed(GATEWAY, key)

    @implements(stubs.update_gateway_spec)
    def update_gateway_spec(self, request: UpdateSpec) -> dict[str, Any] | None:
        return self._update_spec_trimmed(GATEWAY, request)

    @implements(stubs.delete_gateway)
    def delete_gateway(self, request: DeleteObject) -> bool:
        return self._delete(GATEWAY, request)

    @implements(stubs.create_httproute)
    def create_httproute(self, request: CreateObject) -> dict[str, Any]:
        return trim_object(self._create(HTTPROUTE, request))

    @implements(stubs.get_httproute)
    def get_httproute(self, key: ObjectKey) -> dict[str, Any] | None:
        return self._get_trimmed(HTTPROUTE, key)

    @implements(stubs.update_httproute_spec)
    def update_httproute_spec(self, request: UpdateSpec) -> dict[str, Any] | None:
        """Replace the route's spec (its weighted backendRefs); None when the route is gone."""
        return self._update_spec_trimmed(HTTPROUTE, request)

    @implements(stubs.delete_httproute)
    def delete_httproute(self, request: DeleteObject) -> bool:
        return self._delete(HTTPROUTE, request)
