"""The sandbox's Gateway API rules, pure (no store, no sockets): conditions, which routes attach to which
listeners, how a route's backendRefs resolve to Services, and the Gateway and HTTPRoute statuses that
follow. The controller that applies them is sandbox/gateway/controller.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sandbox.gateway.resync import Key, Obj, is_headless, key_of
from sandbox.proxy import ProxyRoute, Target, WeightedBackend
from sandbox.proxy_mirror import MirrorBackend

GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_API_VERSION = f"{GATEWAY_GROUP}/v1"
CONTROLLER_NAME = "sandbox.raypilot.io/gateway-controller"

ServiceAddress = Callable[[str, str, int], Target | None]  # (namespace, name, port) -> where it listens


# --- pure: conditions, attachment, backends ---------------------------------------------------------------


def condition(kind: str, ok: bool, reason: str, message: str, generation: int) -> Obj:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def keep_transition_times(new: list[Obj], old: list[Obj] | None) -> list[Obj]:
    """A condition whose status did not change keeps its lastTransitionTime (and so causes no write)."""
    previous = {c.get("type"): c for c in old or []}
    for item in new:
        before = previous.get(item["type"])
        if before is not None and before.get("status") == item["status"] and before.get("lastTransitionTime"):
            item["lastTransitionTime"] = before["lastTransitionTime"]
    return new


def gateway_parent_refs(route: Obj) -> list[tuple[Obj, Key]]:
    """The route's parentRefs that point at Gateways, with the Gateway each names."""
    namespace = key_of(route)[0]
    refs = []
    for ref in (route.get("spec") or {}).get("parentRefs") or []:
        if ref.get("group", GATEWAY_GROUP) == GATEWAY_GROUP and ref.get("kind", "Gateway") == "Gateway":
            refs.append((ref, (ref.get("namespace") or namespace, ref["name"])))
    return refs


def listener_allows(
    listener: Obj, gateway_namespace: str, route_namespace: str, ns_labels: dict[str, str]
) -> bool:
    if listener.get("protocol") != "HTTP":
        return False
    allowed = listener.get("allowedRoutes") or {}
    kinds = allowed.get("kinds")
    if kinds and not any(
        k.get("kind") == "HTTPRoute" and k.get("group", GATEWAY_GROUP) == GATEWAY_GROUP for k in kinds
    ):
        return False
    namespaces = allowed.get("namespaces") or {}
    origin = namespaces.get("from", "Same")
    if origin == "All":
        return True
    if origin == "Selector":
        wanted = (namespaces.get("selector") or {}).get("matchLabels") or {}
        return all(ns_labels.get(k) == v for k, v in wanted.items())
    return route_namespace == gateway_namespace


@dataclass(frozen=True)
class Attachment:
    """How one parentRef of a route binds to a Gateway: the listeners it attached to, or why none."""

    listeners: tuple[str, ...]
    reason: str
    message: str


def attach(route: Obj, parent_ref: Obj, gateway: Obj | None, ns_labels: dict[str, str]) -> Attachment:
    if gateway is None or gateway["metadata"].get("deletionTimestamp"):
        return Attachment((), "NoMatchingParent", "the Gateway does not exist")
    candidates = [
        listener
        for listener in (gateway.get("spec") or {}).get("listeners") or []
        if parent_ref.get("sectionName") in (None, listener.get("name"))
        and parent_ref.get("port") in (None, listener.get("port"))
    ]
    if not candidates:
        return Attachment((), "NoMatchingParent", "no listener matches the parentRef's sectionName and port")
    gateway_ns, route_ns = key_of(gateway)[0], key_of(route)[0]
    names = tuple(c["name"] for c in candidates if listener_allows(c, gateway_ns, route_ns, ns_labels))
    if not names:
        return Attachment((), "NotAllowedByListeners", "no HTTP listener allows this route")
    return Attachment(names, "Accepted", "attached to listener(s) " + ", ".join(names))


@dataclass
class ResolvedRoute:
    """A route's rules as proxy routes, and the outcome of resolving its backendRefs."""

    proxy_routes: list[ProxyRoute] = field(default_factory=list)
    ref_problems: list[tuple[str, str]] = field(default_factory=list)  # (reason, message)
    skipped_matches: int = 0


def resolve_route(
    route: Obj, services: dict[Key, Obj], service_address: ServiceAddress | None
) -> ResolvedRoute:
    namespace = key_of(route)[0]
    resolved = ResolvedRoute()
    for rule in (route.get("spec") or {}).get("rules") or []:
        backends = []
        for ref in rule.get("backendRefs") or []:
            target, problem = _resolve_backend(ref, namespace, services, service_address)
            if problem is not None:
                resolved.ref_problems.append(problem)
            elif target is not None:
                backends.append(WeightedBackend(target[0], target[1], int(ref.get("weight", 1))))
        mirrors = _mirrors(rule, namespace, services, service_address, resolved)
        for match in rule.get("matches") or [{}]:
            path = match.get("path") or {"type": "PathPrefix", "value": "/"}
            headers = match.get("headers") or []
            exact = all(header.get("type", "Exact") == "Exact" for header in headers)
            kinds = set(match) - {"path", "headers"}
            if path.get("type", "PathPrefix") != "PathPrefix" or kinds or not exact:
                resolved.skipped_matches += 1
                continue
            wanted = tuple((str(h.get("name", "")).lower(), str(h.get("value", ""))) for h in headers)
            resolved.proxy_routes.append(ProxyRoute(path.get("value", "/"), tuple(backends), wanted, mirrors))
    return resolved


def _mirrors(
    rule: Obj,
    namespace: str,
    services: dict[Key, Obj],
    service_address: ServiceAddress | None,
    resolved: ResolvedRoute,
) -> tuple[MirrorBackend, ...]:
    """The rule's RequestMirror filters as mirror backends: `percent` (0-100), or `fraction`
    (numerator/denominator, rounded down to a percent), or every request without either; a backendRef that
    does not resolve is a ResolvedRefs problem, as a backend's is."""
    mirrors = []
    for entry in rule.get("filters") or []:
        if entry.get("type") != "RequestMirror":
            continue
        spec = entry.get("requestMirror") or {}
        target, problem = _resolve_backend(spec.get("backendRef") or {}, namespace, services, service_address)
        if problem is not None:
            resolved.ref_problems.append(problem)
            continue
        if target is None:
            continue
        fraction = spec.get("fraction") or {}
        if "percent" in spec:
            percent = int(spec["percent"])
        elif fraction:
            percent = 100 * int(fraction.get("numerator", 0)) // int(fraction.get("denominator", 100) or 100)
        else:
            percent = 100
        mirrors.append(MirrorBackend(target[0], target[1], max(0, min(percent, 100))))
    return tuple(mirrors)


def _resolve_backend(
    ref: Obj, route_namespace: str, services: dict[Key, Obj], service_address: ServiceAddress | None
) -> tuple[Target | None, tuple[str, str] | None]:
    name = ref.get("name", "")
    if ref.get("group", "") != "" or ref.get("kind", "Service") != "Service":
        return None, ("InvalidKind", f"backendRef {name}: only core Services are supported")
    namespace = ref.get("namespace") or route_namespace
    if namespace != route_namespace:
        return None, (
            "RefNotPermitted",
            f"backendRef {namespace}/{name}: cross-namespace refs need a ReferenceGrant",
        )
    service = services.get((namespace, name))
    port = ref.get("port")
    if service is None:
        return None, ("BackendNotFound", f"Service {namespace}/{name} not found")
    if port is None or not any(p.get("port") == port for p in service["spec"].get("ports") or []):
        return None, ("BackendNotFound", f"Service {namespace}/{name} has no port {port}")
    if is_headless(service):
        return None, ("BackendNotFound", f"Service {namespace}/{name} is headless (no clusterIP to route to)")
    actual = service_address(namespace, name, int(port)) if service_address else None
    return actual or (str(service["spec"]["clusterIP"]), int(port)), None


def route_parent_status(route: Obj, parent_ref: Obj, attachment: Attachment, resolved: ResolvedRoute) -> Obj:
    generation = int(route["metadata"].get("generation", 1))
    accepted = bool(attachment.listeners) and bool(resolved.proxy_routes or not resolved.skipped_matches)
    reason, message = attachment.reason, attachment.message
    if attachment.listeners and not accepted:
        reason, message = "UnsupportedValue", "no rule has a supported match (path type PathPrefix only)"
    conditions = [condition("Accepted", accepted, reason, message, generation)]
    if resolved.ref_problems:
        problem = resolved.ref_problems[0]
        all_messages = "; ".join(m for _, m in resolved.ref_problems)
        conditions.append(condition("ResolvedRefs", False, problem[0], all_messages, generation))
    else:
        conditions.append(
            condition("ResolvedRefs", True, "ResolvedRefs", "all backendRefs resolved", generation)
        )
    if accepted and resolved.skipped_matches:
        text = f"{resolved.skipped_matches} match(es) skipped: only path matches of type PathPrefix work here"
        conditions.append(condition("PartiallyInvalid", True, "UnsupportedValue", text, generation))
    return {"parentRef": parent_ref, "controllerName": CONTROLLER_NAME, "conditions": conditions}


def gateway_status(gateway: Obj, address: str, listening: dict[int, int], attached: dict[str, int]) -> Obj:
    """`listening` maps each bound listener port to the port really bound (they differ only when this process
    may not bind ports below 1024)."""
    generation = int(gateway["metadata"].get("generation", 1))
    listeners = (gateway.get("spec") or {}).get("listeners") or []
    http_ports = {int(entry["port"]) for entry in listeners if entry.get("protocol") == "HTTP"}
    listener_statuses = []
    for listener in listeners:
        http = listener.get("protocol") == "HTTP"
        programmed = http and listener.get("port") in listening
        accepted_reason = "Accepted" if http else "UnsupportedProtocol"
        listener_statuses.append(
            {
                "name": listener["name"],
                "supportedKinds": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute"}] if http else [],
                "attachedRoutes": attached.get(listener["name"], 0),
                "conditions": [
                    condition("Accepted", http, accepted_reason, "", generation),
                    condition(
                        "Programmed", programmed, "Programmed" if programmed else "Invalid", "", generation
                    ),
                    condition("ResolvedRefs", True, "ResolvedRefs", "", generation),
                    condition("Conflicted", False, "NoConflicts", "", generation),
                ],
            }
        )
    all_valid = all(entry.get("protocol") == "HTTP" for entry in listeners)
    accepted_reason = "Accepted" if all_valid else "ListenersNotValid"
    unbound = sorted(http_ports - listening.keys())
    if unbound:
        programmed = condition(
            "Programmed",
            False,
            "AddressNotUsable",
            f"cannot listen on {address} port(s) {unbound}",
            generation,
        )
    else:
        where = ", ".join(f"{address}:{actual}" for _, actual in sorted(listening.items()))
        programmed = condition("Programmed", True, "Programmed", f"listening on {where}", generation)
    return {
        "addresses": [{"type": "IPAddress", "value": address}],
        "conditions": [condition("Accepted", bool(http_ports), accepted_reason, "", generation), programmed],
        "listeners": listener_statuses,
    }
