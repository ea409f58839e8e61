"""Gateway API objects of an incremental upgrade: the Gateway, the weighted HTTPRoute, and reading them back.

KubeRay counterparts (rayservice_controller.go, utils/util.go):
- `gateway_manifest`: createGateway (class from clusterUpgradeOptions, one listener http/HTTP/80)
- `http_route_manifest`, `desired_http_route`: createHTTPRoute (one rule, PathPrefix "/", a weighted backend
  per cluster; the weights come from incremental.traffic_step)
- `gateway_update`, `http_route_update`: reconcileGateway / reconcileHTTPRoute (update only when not equal)
- `is_gateway_equal`, `is_http_route_equal`, `is_gateway_ready`, `is_http_route_ready`,
  `weights_from_http_route`: IsGatewayEqual, IsHTTPRouteEqual, IsGatewayReady, IsHTTPRouteReady,
  GetWeightsFromHTTPRoute
Objects are Kubernetes JSON dicts (gateway.networking.k8s.io/v1).

Where raypilot differs: the objects carry raypilot's ownership labels and workflow-id annotation instead of an
ownerReference to the RayService (which is a workflow, not an object). Updates replace only `spec`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from models.naming import (
    GATEWAY_LISTENER_NAME,
    GATEWAY_LISTENER_PORT,
    GATEWAY_LISTENER_PROTOCOL,
    KIND_RAYSERVICE,
    gateway_name,
    http_route_name,
    ownership_labels,
    serve_service_name,
    workflow_annotations,
    workflow_id,
)
from models.raycluster import RayCluster
from models.rayservice import RayService
from wire.views import condition_true
from wire.views import gateway_ready as is_gateway_ready
from workflows.decisions.rayservice.services import serve_port
from workflows.decisions.rayservice.upgrade.incremental import TrafficMoment, TrafficStep, traffic_step

__all__ = [
    "GATEWAY_API_VERSION",
    "RouteBackend",
    "desired_http_route",
    "gateway_manifest",
    "gateway_update",
    "http_route_manifest",
    "http_route_update",
    "is_gateway_equal",
    "is_gateway_ready",
    "is_http_route_equal",
    "is_http_route_ready",
    "weights_from_http_route",
]

GATEWAY_API_VERSION: Final = "gateway.networking.k8s.io/v1"


def _metadata(rayservice: RayService, name: str) -> dict[str, Any]:
    namespace, owner = rayservice.metadata.namespace, rayservice.metadata.name
    return {
        "name": name,
        "namespace": namespace,
        "labels": ownership_labels(KIND_RAYSERVICE, owner),
        "annotations": workflow_annotations(workflow_id(KIND_RAYSERVICE, namespace, owner)),
    }


def gateway_manifest(rayservice: RayService) -> dict[str, Any]:
    """`<rs>-gateway`; ValueError without clusterUpgradeOptions (KubeRay's message)."""
    strategy = rayservice.spec.upgrade_strategy
    options = strategy.cluster_upgrade_options if strategy is not None else None
    if options is None:
        raise ValueError("Missing RayService ClusterUpgradeOptions during upgrade.")
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": _metadata(rayservice, gateway_name(rayservice.metadata.name)),
        "spec": {
            "gatewayClassName": options.gateway_class_name,
            "listeners": [
                {
                    "name": GATEWAY_LISTENER_NAME,
                    "protocol": GATEWAY_LISTENER_PROTOCOL,
                    "port": GATEWAY_LISTENER_PORT,
                }
            ],
        },
    }


@dataclass(frozen=True)
class RouteBackend:
    """One cluster behind the HTTPRoute: its `<rc>-serve-svc` on the cluster's serve port, with its weight."""

    cluster: str
    serve_port: int
    weight: int


def _backend(backend: RouteBackend, namespace: str) -> dict[str, Any]:
    return {
        "name": serve_service_name(backend.cluster),
        "namespace": namespace,
        "port": backend.serve_port,
        "weight": backend.weight,
    }


def http_route_manifest(
    rayservice: RayService, active: RouteBackend, pending: RouteBackend | None = None
) -> dict[str, Any]:
    """`<rs>-httproute` attached to `<rs>-gateway`: PathPrefix "/" to the clusters' `<rc>-serve-svc` with the
    given weights (the pending backend only when a pending cluster exists). KubeRay builds none without an
    active cluster; the caller skips the route then."""
    namespace = rayservice.metadata.namespace
    backends = [_backend(active, namespace)]
    if pending is not None and pending.cluster:
        backends.append(_backend(pending, namespace))
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": _metadata(rayservice, http_route_name(rayservice.metadata.name)),
        "spec": {
            "parentRefs": [{"name": gateway_name(rayservice.metadata.name), "namespace": namespace}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": backends,
                }
            ],
        },
    }


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("spec") or {}


def is_gateway_equal(existing: Mapping[str, Any] | None, desired: Mapping[str, Any] | None) -> bool:
    """IsGatewayEqual: same class and the same listeners by name, protocol and port."""
    if existing is None or desired is None:
        return existing is desired
    current, goal = _spec(existing), _spec(desired)
    if current.get("gatewayClassName", "") != goal.get("gatewayClassName", ""):
        return False
    return _same_items(current.get("listeners"), goal.get("listeners"), _listener_key)


def _same_list(have: Sequence[Any] | None, want: Sequence[Any] | None) -> bool:
    # nil and empty are the same list (API servers renormalize one into the other).
    return list(have or []) == list(want or [])


def _same_items(
    have: Sequence[Mapping[str, Any]] | None,
    want: Sequence[Mapping[str, Any]] | None,
    key: Callable[[Mapping[str, Any]], object],
) -> bool:
    """Two lists that agree item by item on the fields `key` picks (nil and empty alike, as `_same_list`)."""
    return [key(item) for item in have or []] == [key(item) for item in want or []]


def _listener_key(listener: Mapping[str, Any]) -> object:
    return listener.get("name"), listener.get("protocol"), listener.get("port")


def _parent_key(parent: Mapping[str, Any]) -> object:
    return parent.get("name"), parent.get("namespace") or ""


def _backend_key(backend: Mapping[str, Any]) -> object:
    # A missing weight counts as 1, a missing port as 0.
    return (
        backend.get("name"),
        backend.get("namespace") or "",
        backend.get("weight", 1),
        backend.get("port", 0),
    )


def _rule_key(rule: Mapping[str, Any]) -> object:
    backends = [_backend_key(backend) for backend in rule.get("backendRefs") or []]
    return rule.get("matches"), list(rule.get("filters") or []), backends


def is_http_route_equal(existing: Mapping[str, Any] | None, desired: Mapping[str, Any] | None) -> bool:
    """IsHTTPRouteEqual: only the fields raypilot manages (hostnames, parentRefs name/namespace, rule matches,
    filters, and backend name/namespace/weight/port; a missing weight counts as 1, a missing port as 0)."""
    if existing is None or desired is None:
        return existing is desired
    current, goal = _spec(existing), _spec(desired)
    return (
        _same_list(current.get("hostnames"), goal.get("hostnames"))
        and _same_items(current.get("parentRefs"), goal.get("parentRefs"), _parent_key)
        and _same_items(current.get("rules"), goal.get("rules"), _rule_key)
    )


def _with_spec(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    updated = copy.deepcopy(dict(existing))
    updated["spec"] = copy.deepcopy(dict(_spec(desired)))
    return updated


def gateway_update(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """reconcileGateway for an existing Gateway: the object to write back (spec replaced), or None if
    equal."""
    return None if is_gateway_equal(existing, desired) else _with_spec(existing, desired)


def http_route_update(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """reconcileHTTPRoute for an existing HTTPRoute: the object to write back (spec replaced), or None if
    equal."""
    return None if is_http_route_equal(existing, desired) else _with_spec(existing, desired)


def is_http_route_ready(
    gateway_name_: str, gateway_namespace: str, http_route: Mapping[str, Any] | None
) -> bool:
    """IsHTTPRouteReady: the route's parent status for this Gateway has Accepted and ResolvedRefs True (a
    parent ref without a namespace matches any namespace, as in KubeRay)."""
    if http_route is None:
        return False
    for parent in (http_route.get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gateway_name_:
            continue
        if ref.get("namespace") is not None and ref.get("namespace") != gateway_namespace:
            continue
        conditions = parent.get("conditions")
        if condition_true(conditions, "Accepted") and condition_true(conditions, "ResolvedRefs"):
            return True
    return False


def weights_from_http_route(
    http_route: Mapping[str, Any] | None, active_cluster: str, pending_cluster: str
) -> tuple[int, int]:
    """GetWeightsFromHTTPRoute: (active, pending) weights of the first rule; -1 for a side that has no backend
    (a backend belongs to a cluster when its name contains the cluster name; a missing weight counts as 0)."""
    active_weight = pending_weight = -1
    rules = _spec(http_route).get("rules") or []
    if not rules:
        return active_weight, pending_weight
    for backend in rules[0].get("backendRefs") or []:
        name = str(backend.get("name") or "")
        weight = int(backend.get("weight") or 0)
        if active_cluster and active_cluster in name:
            active_weight = weight
        if pending_cluster and pending_cluster in name:
            pending_weight = weight
    return active_weight, pending_weight


def desired_http_route(
    rayservice: RayService, active: RayCluster | None, pending: RayCluster | None, moment: TrafficMoment
) -> tuple[dict[str, Any] | None, TrafficStep]:
    """createHTTPRoute: the route for this moment and the traffic step behind its weights.

    No route without an active cluster (KubeRay skips it). The weights come from `traffic_step`; a pending
    backend is listed only when the pending RayCluster exists.
    """
    step = traffic_step(rayservice.status, moment)
    if active is None:
        return None, step
    route = http_route_manifest(
        rayservice,
        RouteBackend(active.metadata.name, serve_port(active), step.active_weight),
        RouteBackend(pending.metadata.name, serve_port(pending), step.pending_weight)
        if pending is not None
        else None,
    )
    return route, step
