"""A user-owned HTTPRoute (`raypilot.io/httproute: <namespace>/<name>`, models/traffic_refs.py): raypilot
creates no HTTPRoute and edits only the backendRefs it owns in the named one, leaving every other field and
rule as its users (or their GitOps tool) wrote it.

Which backendRefs raypilot owns: those pointing at a serve Service of this RayService, in the RayService's
namespace: `<rs>-serve-svc` (what a route written for a KubeRay RayService points at, so it is how a user
marks the rule to split) and each cluster's `<rc>-serve-svc` (what raypilot writes there). The rules holding
one are the owned rules; a route without any is a problem (a status condition), never a guess.

What raypilot writes in an owned rule: its other backendRefs stay, in their order; the owned ones become the
clusters' `<rc>-serve-svc` with the weights of the upgrade (KubeRay's weighted backends, `traffic_step`): the
active cluster's alone at rest, both while traffic is split. While both are there the route carries the label
`raypilot.io/traffic-split: in-progress`. The write is a JSON Patch (RFC 6902) whose `test` operations guard
exactly the values it replaces, so a route changed since it was read is read again, never overwritten.

When the RayService is deleted the route stays; in each owned rule the clusters' backendRefs give way to one
at `<rs>-serve-svc` again (the backend the route had before raypilot), and the label goes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from models.naming import SUFFIX_ALPHABET, SUFFIX_LENGTH, serve_service_name
from models.traffic_refs import (
    ANNOTATION_GATEWAY,
    ANNOTATION_HTTPROUTE,
    LABEL_TRAFFIC_SPLIT,
    TRAFFIC_SPLIT_IN_PROGRESS,
    NamespacedName,
)
from workflows.decisions.rayservice.upgrade.gateway import is_http_route_ready

__all__ = [
    "RouteOwner",
    "is_owned_backend",
    "owned_rule_indexes",
    "released_route_patch",
    "route_for_status",
    "route_gateway",
    "user_route_patch",
    "user_route_problem",
    "user_route_ready",
]

JsonPatch = list[dict[str, Any]]

_GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
_LABEL_PATH: Final = "/metadata/labels/" + LABEL_TRAFFIC_SPLIT.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class RouteOwner:
    """The RayService whose backends these are, and the clusters it has or had."""

    rayservice: str
    namespace: str
    clusters: tuple[str, ...] = ()

    def _is_generated_cluster_service(self, name: str) -> bool:
        prefix, suffix = f"{self.rayservice}-", "-serve-svc"
        if not (name.startswith(prefix) and name.endswith(suffix)):
            return False
        middle = name[len(prefix) : -len(suffix)]
        return len(middle) == SUFFIX_LENGTH and all(char in SUFFIX_ALPHABET for char in middle)

    def owns_service(self, name: str) -> bool:
        return (
            name == serve_service_name(self.rayservice)
            or name in {serve_service_name(cluster) for cluster in self.clusters if cluster}
            or self._is_generated_cluster_service(name)
        )


def _route_namespace(route: Mapping[str, Any]) -> str:
    return str((route.get("metadata") or {}).get("namespace") or "")


def is_owned_backend(backend: Mapping[str, Any], owner: RouteOwner, route_namespace: str) -> bool:
    """A backendRef to a serve Service of this RayService (a core Service; its namespace defaults to the
    route's, as in Gateway API)."""
    if (backend.get("group") or "") != "" or (backend.get("kind") or "Service") != "Service":
        return False
    if (backend.get("namespace") or route_namespace) != owner.namespace:
        return False
    return owner.owns_service(str(backend.get("name") or ""))


def _rules(route: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((route.get("spec") or {}).get("rules") or [])


def owned_rule_indexes(route: Mapping[str, Any], owner: RouteOwner) -> list[int]:
    """The rules (by index) with at least one owned backendRef."""
    namespace = _route_namespace(route)
    return [
        index
        for index, rule in enumerate(_rules(route))
        if any(is_owned_backend(ref, owner, namespace) for ref in rule.get("backendRefs") or [])
    ]


def _parent_gateways(route: Mapping[str, Any]) -> list[NamespacedName]:
    namespace = _route_namespace(route)
    return [
        NamespacedName(str(ref.get("namespace") or namespace), str(ref.get("name") or ""))
        for ref in (route.get("spec") or {}).get("parentRefs") or []
        if (ref.get("kind") or "Gateway") == "Gateway"
        and (ref.get("group") or _GATEWAY_GROUP) == _GATEWAY_GROUP
    ]


def route_gateway(route: Mapping[str, Any] | None, annotated: NamespacedName | None) -> NamespacedName | None:
    """The Gateway whose parent status says whether the route is ready: the annotated one, else the
    route's first Gateway parentRef."""
    if annotated is not None:
        return annotated
    parents = _parent_gateways(route) if route is not None else []
    return parents[0] if parents else None


def user_route_problem(
    ref: NamespacedName,
    route: Mapping[str, Any] | None,
    owner: RouteOwner,
    annotated_gateway: NamespacedName | None,
) -> str | None:
    """Why raypilot cannot steer traffic through the user's route; None when it can."""
    where = f"HTTPRoute {ref} (metadata.annotations[{ANNOTATION_HTTPROUTE}])"
    if route is None:
        return f"{where} does not exist; raypilot waits for it and creates no HTTPRoute of its own"
    if not owned_rule_indexes(route, owner):
        anchor = f"{owner.namespace}/{serve_service_name(owner.rayservice)}"
        return (
            f"{where} has no rule with a backendRef to Service {anchor} (or to a serve Service of this "
            "RayService's clusters): add one to the rule whose traffic raypilot is to split"
        )
    parents = _parent_gateways(route)
    if annotated_gateway is not None and annotated_gateway not in parents:
        return (
            f"{where} does not attach to Gateway {annotated_gateway} "
            f"(metadata.annotations[{ANNOTATION_GATEWAY}]): no parentRef names it"
        )
    if not parents:
        return f"{where} names no Gateway in spec.parentRefs"
    return None


def user_route_ready(route: Mapping[str, Any] | None, gateway: NamespacedName | None) -> bool:
    """The route's parent status for its Gateway says Accepted and ResolvedRefs (KubeRay's
    IsHTTPRouteReady)."""
    return gateway is not None and is_http_route_ready(gateway.name, gateway.namespace, route)


def _normalized(backend: Mapping[str, Any], route_namespace: str) -> tuple[object, ...]:
    # What the API server defaults (group, kind, weight 1, the route's namespace) counts as written.
    return (
        backend.get("group") or "",
        backend.get("kind") or "Service",
        backend.get("name"),
        backend.get("namespace") or route_namespace,
        backend.get("port"),
        backend.get("weight", 1),
        tuple(backend.get("filters") or []),
    )


def _same_backends(
    have: Sequence[Mapping[str, Any]], want: Sequence[Mapping[str, Any]], route_namespace: str
) -> bool:
    return [_normalized(item, route_namespace) for item in have] == [
        _normalized(item, route_namespace) for item in want
    ]


def _rules_patch(
    route: Mapping[str, Any], owner: RouteOwner, owned: Sequence[Mapping[str, Any]]
) -> JsonPatch:
    """Per owned rule: test its backendRefs as read, replace them with its other backendRefs followed by
    `owned` (none when they are already that)."""
    namespace, ops = _route_namespace(route), []
    for index in owned_rule_indexes(route, owner):
        current = list(_rules(route)[index].get("backendRefs") or [])
        kept = [ref for ref in current if not is_owned_backend(ref, owner, namespace)]
        wanted = kept + [dict(ref) for ref in owned]
        if _same_backends(current, wanted, namespace):
            continue
        path = f"/spec/rules/{index}/backendRefs"
        ops += [
            {"op": "test", "path": path, "value": current},
            {"op": "replace", "path": path, "value": wanted},
        ]
    return ops


def _label_patch(route: Mapping[str, Any], split: bool) -> JsonPatch:
    labels = (route.get("metadata") or {}).get("labels")
    has = labels is not None and LABEL_TRAFFIC_SPLIT in labels
    if split and (labels or {}).get(LABEL_TRAFFIC_SPLIT) == TRAFFIC_SPLIT_IN_PROGRESS:
        return []
    if split and labels is None:
        return [
            {
                "op": "add",
                "path": "/metadata/labels",
                "value": {LABEL_TRAFFIC_SPLIT: TRAFFIC_SPLIT_IN_PROGRESS},
            }
        ]
    if split:
        return [{"op": "add", "path": _LABEL_PATH, "value": TRAFFIC_SPLIT_IN_PROGRESS}]
    return [{"op": "remove", "path": _LABEL_PATH}] if has else []


def user_route_patch(
    route: Mapping[str, Any], owner: RouteOwner, backends: Sequence[Mapping[str, Any]]
) -> JsonPatch | None:
    """The JSON Patch that gives each owned rule these cluster backends (KubeRay's weighted backendRefs,
    in order) and sets the traffic-split label while there are two; None when the route already says so."""
    ops = _rules_patch(route, owner, backends) + _label_patch(route, split=len(backends) > 1)
    return ops or None


def released_route_patch(route: Mapping[str, Any], owner: RouteOwner, serve_port: int) -> JsonPatch | None:
    """At the RayService's deletion: each owned rule points at `<rs>-serve-svc` again instead of the clusters,
    the label goes; None when nothing is left to change."""
    anchor: dict[str, Any] = {"name": serve_service_name(owner.rayservice), "port": serve_port}
    if _route_namespace(route) != owner.namespace:
        anchor["namespace"] = owner.namespace
    ops = _rules_patch(route, owner, [anchor]) + _label_patch(route, split=False)
    return ops or None


def route_for_status(route: Mapping[str, Any] | None, owner: RouteOwner) -> dict[str, Any] | None:
    """The route as the status reads its weights back (`weights_from_http_route` reads the first rule): only
    the first owned rule."""
    if route is None:
        return None
    owned = owned_rule_indexes(route, owner)
    if not owned:
        return None
    return {"spec": {"rules": [dict(_rules(route)[owned[0]])]}}
