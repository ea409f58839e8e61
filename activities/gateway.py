"""Gateway API activities (gateway.networking.k8s.io/v1 Gateway and HTTPRoute) for incremental upgrades.

raypilot owns the spec of `<rs>-gateway` and `<rs>-httproute`; their status belongs to the Gateway
controller, so updates replace the spec on a fresh read (conflicts retried) and never write status. Of a
shared Gateway (`raypilot.io/gateway`) raypilot only reads the object and the labels of the namespace its
route comes from; of a user-owned HTTPRoute (`raypilot.io/httproute`) it patches only what the workflow's
JSON Patch names, guarded by that patch's `test` operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException
from temporalio import activity

from activities.kubernetes.client import kubernetes_errors
from activities.kubernetes.clusters import KubernetesActivityBase
from activities.kubernetes.resources import GATEWAY, HTTPROUTE, NAMESPACE, trim_object
from wire import stubs
from wire.kubernetes import CreateObject, DeleteObject, ObjectKey, PatchRoute, RoutePatched, UpdateSpec
from wire.stubs.common import implements
from wire.views import condition_true


def route_ready(
    route: Mapping[str, Any] | None, gateway_name: str, namespace: str, route_namespace: str | None = None
) -> bool:
    """The route's status entry for our Gateway (in `namespace`; a parentRef without a namespace means the
    route's, `route_namespace`, by default the same) says Accepted and ResolvedRefs (KubeRay's
    IsHTTPRouteReady)."""
    if not route:
        return False
    own_namespace = route_namespace or namespace
    for parent in (route.get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gateway_name or (ref.get("namespace") or own_namespace) != namespace:
            continue
        conditions = parent.get("conditions")
        if condition_true(conditions, "Accepted") and condition_true(conditions, "ResolvedRefs"):
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

    @implements(stubs.patch_httproute)
    def patch_httproute(self, request: PatchRoute) -> RoutePatched:
        """Apply the workflow's JSON Patch to a user-owned route. A failed `test` (the route changed since
        the workflow read it, 422) applies nothing and returns the route as it is now, for the workflow to
        decide again; a retry of a patch that was applied finds its `test` failing the same way."""
        described = HTTPROUTE.describe(request.namespace, request.name)
        with kubernetes_errors(f"patch {described}"):
            try:
                patched = self.kube.json_patch(HTTPROUTE, request.namespace, request.name, request.patch)
            except ApiException as exc:
                if exc.status != 422:
                    raise
                activity.logger.info("%s changed since it was read; not patched", described)
                current = self.kube.get(HTTPROUTE, request.namespace, request.name)
                return RoutePatched(trim_object(current) if current is not None else None, applied=False)
        return RoutePatched(
            trim_object(patched) if patched is not None else None, applied=patched is not None
        )

    @implements(stubs.get_namespace_labels)
    def get_namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """The namespace's labels (`kubernetes.io/metadata.name` among them), or None when it does not
        exist."""
        with kubernetes_errors(f"get namespace {namespace!r}"):
            found = self.kube.get(NAMESPACE, None, namespace)
        if found is None:
            return None
        return dict((found.get("metadata") or {}).get("labels") or {})
