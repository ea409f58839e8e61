"""The Gateway controller: a weighted HTTP proxy per Gateway, driven by HTTPRoutes, and its statuses."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sandbox.gateway import controller as gateway_controller
from sandbox.gateway.controller import (
    GATEWAY_API_VERSION,
    GatewayController,
    attach,
    resolve_route,
)
from sandbox.netalloc import AddressPool
from sandbox.proxy import ProxyRoute, WeightedBackend, WeightedHttpProxy
from tests.sandbox.network.objects import Objects


def gateway_manifest(name: str = "gw", namespace: str = "default", **listener: Any) -> dict[str, Any]:
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "gatewayClassName": "any-class",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP", **listener}],
        },
    }


def route_manifest(
    backends: list[tuple[str, int | None]], *, name: str = "rt", namespace: str = "default", **rule: Any
) -> dict[str, Any]:
    refs = [{"name": svc, "port": 8000, **({"weight": w} if w is not None else {})} for svc, w in backends]
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": refs, **rule}
            ],
        },
    }


def service(
    name: str, cluster_ip: str = "127.0.1.9", namespace: str = "default", **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterIP": cluster_ip, "ports": [{"port": 8000, "targetPort": 8000}], **spec},
    }


# --- pure decisions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent_ref", "gateway", "route_ns", "expected"),
    [
        ({"name": "gw"}, None, "default", ((), "NoMatchingParent")),
        ({"name": "gw"}, gateway_manifest(), "default", (("http",), "Accepted")),
        ({"name": "gw", "sectionName": "http"}, gateway_manifest(), "default", (("http",), "Accepted")),
        ({"name": "gw", "sectionName": "https"}, gateway_manifest(), "default", ((), "NoMatchingParent")),
        ({"name": "gw", "port": 8080}, gateway_manifest(), "default", ((), "NoMatchingParent")),
        ({"name": "gw", "namespace": "default"}, gateway_manifest(), "apps", ((), "NotAllowedByListeners")),
        (
            {"name": "gw", "namespace": "default"},
            gateway_manifest(allowedRoutes={"namespaces": {"from": "All"}}),
            "apps",
            (("http",), "Accepted"),
        ),
        (
            {"name": "gw", "namespace": "default"},
            gateway_manifest(
                allowedRoutes={"namespaces": {"from": "Selector", "selector": {"matchLabels": {"t": "1"}}}}
            ),
            "apps",
            (("http",), "Accepted"),
        ),
        (
            {"name": "gw"},
            gateway_manifest(allowedRoutes={"kinds": [{"kind": "GRPCRoute"}]}),
            "default",
            ((), "NotAllowedByListeners"),
        ),
        ({"name": "gw"}, gateway_manifest(protocol="TCP"), "default", ((), "NotAllowedByListeners")),
    ],
)
def test_attach(parent_ref, gateway, route_ns, expected) -> None:
    route = route_manifest([], namespace=route_ns)
    attachment = attach(route, parent_ref, gateway, {"t": "1"})
    assert (attachment.listeners, attachment.reason) == expected


@pytest.mark.parametrize(
    ("backends", "services", "expected_backends", "expected_problems"),
    [
        pytest.param([("a", 80), ("b", 20)], ["a", "b"], [("a", 80), ("b", 20)], [], id="weighted"),
        pytest.param([("a", None)], ["a"], [("a", 1)], [], id="default-weight-1"),
        pytest.param([("a", 0), ("b", 3)], ["a", "b"], [("a", 0), ("b", 3)], [], id="zero-kept-as-zero"),
        pytest.param([("a", 1), ("gone", 1)], ["a"], [("a", 1)], ["BackendNotFound"], id="missing-service"),
        pytest.param([("headless", 1)], ["headless"], [], ["BackendNotFound"], id="headless"),
    ],
)
def test_resolve_route_backends(backends, services, expected_backends, expected_problems) -> None:
    ips = {"a": "127.0.1.10", "b": "127.0.1.11", "headless": "None"}
    known = {("default", s): service(s, ips[s]) for s in services}
    resolved = resolve_route(route_manifest(backends), known, None)
    by_ip = {ip: name for name, ip in ips.items()}
    [proxy_route] = resolved.proxy_routes
    assert [(by_ip[b.host], b.weight) for b in proxy_route.backends] == expected_backends
    assert [reason for reason, _ in resolved.ref_problems] == expected_problems


def test_resolve_route_refuses_other_kinds_and_namespaces_and_skips_unsupported_matches() -> None:
    route = route_manifest([("a", 1)])
    route["spec"]["rules"][0]["backendRefs"] += [
        {"name": "b", "namespace": "elsewhere", "port": 8000},
        {"name": "c", "kind": "ConfigMap", "group": "", "port": 8000},
    ]
    route["spec"]["rules"][0]["matches"] += [
        {"path": {"type": "Exact", "value": "/x"}},
        {"path": {"type": "PathPrefix", "value": "/h"}, "headers": [{"name": "X-Canary", "value": "1"}]},
        {"path": {"type": "PathPrefix", "value": "/r"}, "headers": [{"type": "RegularExpression"}]},
        {"path": {"type": "PathPrefix", "value": "/q"}, "queryParams": [{"name": "x", "value": "1"}]},
        {"path": {"type": "PathPrefix", "value": "/api"}},
    ]
    known = {
        ("default", "a"): service("a", "127.0.1.10"),
        ("elsewhere", "b"): service("b", namespace="elsewhere"),
    }
    resolved = resolve_route(route, known, lambda ns, name, port: ("127.0.0.1", 1234))
    backend = WeightedBackend("127.0.0.1", 1234, 1)
    assert resolved.proxy_routes == [
        ProxyRoute("/", (backend,)),
        ProxyRoute("/h", (backend,), (("x-canary", "1"),)),  # Exact header matches are routed
        ProxyRoute("/api", (backend,)),
    ]
    assert [reason for reason, _ in resolved.ref_problems] == ["RefNotPermitted", "InvalidKind"]
    assert resolved.skipped_matches == 3


# --- the controller ---------------------------------------------------------------------------------------


async def test_a_listener_has_its_routes_before_it_accepts_its_first_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy bound before its routes are set answers 404 to whatever arrives in between."""
    objects = Objects(
        {"apiVersion": "v1", "kind": "Service", **service("a")},
        route_manifest([("a", None)]),
        gateway_manifest(),
    )
    routes_when_bound: list[tuple[ProxyRoute, ...]] = []

    async def bind(listener: WeightedHttpProxy) -> bool:
        routes_when_bound.append(listener.routes)
        return True

    monkeypatch.setattr(gateway_controller, "start_listener", bind)
    controller = GatewayController(objects, AddressPool(f"127.0.2.{random.randrange(8, 16) * 16}/28"))
    await controller.reconcile()
    assert [len(routes) for routes in routes_when_bound] == [1]
    assert controller.listen_address("default", "gw", 80) is not None
