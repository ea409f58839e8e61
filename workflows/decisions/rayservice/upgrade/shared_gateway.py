"""A shared Gateway (`raypilot.io/gateway: <namespace>/<name>`, models/traffic_refs.py): raypilot creates no
`<rs>-gateway`; the route it steers attaches to the named Gateway, which must exist and admit HTTPRoutes from
the route's namespace.

Admission is Gateway API's (ListenerSpec.allowedRoutes): a route attaches when at least one listener admits
it. A listener admits namespaces `from: Same` (its default: the Gateway's own namespace), `All`, or
`Selector` (the namespaces whose labels match `selector`, a Kubernetes label selector), and the kinds
`allowedRoutes.kinds` lists (by default those of its protocol: HTTPRoute for HTTP and HTTPS).

Where raypilot differs from KubeRay (which has no shared Gateway yet; its open PR #5018 proposes
`gatewayRef`): the Gateway is only read, never written or deleted.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from models.traffic_refs import ANNOTATION_GATEWAY, NamespacedName

__all__ = [
    "attached_to_gateway",
    "gateway_admission_problem",
    "label_selector_matches",
    "listener_admits",
    "needs_namespace_labels",
]

_GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
# The route kinds a listener admits when `allowedRoutes.kinds` is empty (Gateway API: by protocol).
_HTTP_PROTOCOLS: Final = ("HTTP", "HTTPS")


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector against labels: every matchLabels pair and every matchExpressions term
    (In, NotIn, Exists, DoesNotExist). An empty selector matches everything (as LabelSelectorAsSelector)."""
    found = selector or {}
    for key, value in (found.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in found.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = list(expression.get("values") or [])
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an unknown operator matches nothing (the API server refuses it anyway)
    return True


def _admits_kind(listener: Mapping[str, Any]) -> bool:
    kinds = (listener.get("allowedRoutes") or {}).get("kinds") or []
    if not kinds:
        return listener.get("protocol") in _HTTP_PROTOCOLS
    return any(
        kind.get("kind") == "HTTPRoute" and (kind.get("group") or _GATEWAY_GROUP) == _GATEWAY_GROUP
        for kind in kinds
    )


def _namespaces_from(listener: Mapping[str, Any]) -> str:
    namespaces = (listener.get("allowedRoutes") or {}).get("namespaces") or {}
    return str(namespaces.get("from") or "Same")


def listener_admits(
    listener: Mapping[str, Any],
    gateway_namespace: str,
    route_namespace: str,
    namespace_labels: Mapping[str, str] | None,
) -> bool:
    """Whether this listener admits an HTTPRoute from `route_namespace`. `namespace_labels`: the labels of
    that namespace (None: not read; a Selector then admits nothing)."""
    if not _admits_kind(listener):
        return False
    source = _namespaces_from(listener)
    if source == "All":
        return True
    if source == "Same":
        return route_namespace == gateway_namespace
    if source == "Selector":
        selector = ((listener.get("allowedRoutes") or {}).get("namespaces") or {}).get("selector")
        return namespace_labels is not None and label_selector_matches(selector, namespace_labels)
    return False


def _listeners(gateway: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return list((gateway.get("spec") or {}).get("listeners") or [])


def needs_namespace_labels(gateway: Mapping[str, Any] | None) -> bool:
    """A listener admits namespaces by a label selector: the route namespace's labels must be read."""
    return gateway is not None and any(_namespaces_from(item) == "Selector" for item in _listeners(gateway))


def _listener_line(listener: Mapping[str, Any]) -> str:
    source = _namespaces_from(listener)
    return f"{listener.get('name', '?')} ({listener.get('protocol', '?')}, from {source})"


def gateway_admission_problem(
    ref: NamespacedName,
    gateway: Mapping[str, Any] | None,
    route_namespace: str,
    namespace_labels: Mapping[str, str] | None,
) -> str | None:
    """Why the shared Gateway cannot carry the route: missing, or no listener admits an HTTPRoute from
    `route_namespace`. None when it can."""
    if gateway is None:
        return (
            f"Gateway {ref} (metadata.annotations[{ANNOTATION_GATEWAY}]) does not exist; "
            "raypilot waits for it and creates no Gateway of its own"
        )
    listeners = _listeners(gateway)
    if any(listener_admits(item, ref.namespace, route_namespace, namespace_labels) for item in listeners):
        return None
    seen = ", ".join(_listener_line(item) for item in listeners) or "none"
    return (
        f"Gateway {ref} (metadata.annotations[{ANNOTATION_GATEWAY}]) admits no HTTPRoute from namespace "
        f"{route_namespace!r}: its listeners' allowedRoutes are {seen}"
    )


def attached_to_gateway(route: dict[str, Any] | None, ref: NamespacedName) -> dict[str, Any] | None:
    """raypilot's `<rs>-httproute` with its one parentRef at the shared Gateway instead of `<rs>-gateway`."""
    if route is None:
        return None
    attached = copy.deepcopy(route)
    attached["spec"]["parentRefs"] = [{"name": ref.name, "namespace": ref.namespace}]
    return attached
