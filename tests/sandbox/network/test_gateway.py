"""The Gateway controller: a weighted HTTP proxy per Gateway, driven by HTTPRoutes, and its statuses."""

from __future__ import annotations

import asyncio
import collections
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from sandbox.controllers import gateway as gateway_controller
from sandbox.controllers.gateway import (
    CONTROLLER_NAME,
    GATEWAY_API_VERSION,
    GatewayController,
    attach,
    resolve_route,
)
from sandbox.controllers.service import ServiceController
from sandbox.netalloc import AddressPool
from sandbox.proxy import ProxyRoute, WeightedBackend, WeightedHttpProxy
from sandbox.store import Store

MERGE = "application/merge-patch+json"


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


# --- the controller against real proxies --------------------------------------------------------------------


@dataclass
class Network:
    store: Store
    services: ServiceController
    gateways: GatewayController


@pytest.fixture
async def network(store: Store) -> AsyncIterator[Network]:
    # A random /28 of the gateway range, away from where concurrently running sandboxes allocate.
    pool = AddressPool(f"127.0.2.{random.randrange(8, 16) * 16}/28")
    services = ServiceController(store)
    gateways = GatewayController(store, pool, service_address=services.listen_address)
    await services.start()
    await gateways.start()
    yield Network(store, services, gateways)
    await gateways.stop()
    await services.stop()


async def serve_pods(network: Network, make_backend, make_pod, free_cluster_ip, names: list[str]) -> None:
    """For each name: a backend answering with that name, its pod and a Service `<name>` selecting it."""
    for name in names:
        backend = await make_backend(name)
        network.store.create(
            "v1", "Pod", make_pod(name, backend.host, {"app": name}, ports={"serve": backend.port})
        )
        manifest = service(name, free_cluster_ip(), selector={"app": name})
        manifest["spec"]["ports"] = [{"name": "serve", "port": 8000, "targetPort": "serve"}]
        network.store.create("v1", "Service", manifest)


def condition_of(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(c for c in conditions if c["type"] == kind)


def route_parent(store: Store, name: str = "rt") -> dict[str, Any] | None:
    route = store.get(GATEWAY_API_VERSION, "HTTPRoute", "default", name)
    parents = (route.get("status") or {}).get("parents") or []
    return next((p for p in parents if p["controllerName"] == CONTROLLER_NAME), None)


def resolved_refs(store: Store) -> tuple[str, str] | None:
    parent = route_parent(store)
    if parent is None:
        return None
    found = condition_of(parent["conditions"], "ResolvedRefs")
    return found["status"], found["reason"]


async def gateway_url(network: Network, eventually) -> str:
    await eventually(lambda: network.gateways.listen_address("default", "gw", 80) is not None)
    host, port = network.gateways.listen_address("default", "gw", 80) or ("", 0)
    return f"http://{host}:{port}"


async def count_backends(session: aiohttp.ClientSession, url: str, total: int) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    semaphore = asyncio.Semaphore(16)

    async def one() -> None:
        async with semaphore, session.get(url) as response:
            assert response.status == 200
            counts[(await response.text()).split()[0]] += 1

    await asyncio.gather(*(one() for _ in range(total)))
    return counts


async def test_gateway_status_and_80_20_split_over_2000_requests(
    network: Network, make_backend, make_pod, free_cluster_ip, http: aiohttp.ClientSession, eventually
) -> None:
    store = network.store
    await serve_pods(network, make_backend, make_pod, free_cluster_ip, ["blue", "green"])
    store.create(GATEWAY_API_VERSION, "Gateway", gateway_manifest())
    store.create(GATEWAY_API_VERSION, "HTTPRoute", route_manifest([("blue", 80), ("green", 20)]))
    await eventually(lambda: resolved_refs(store) == ("True", "ResolvedRefs"))

    gateway = store.get(GATEWAY_API_VERSION, "Gateway", "default", "gw")
    [address] = gateway["status"]["addresses"]
    assert address["type"] == "IPAddress"
    assert network.gateways.pool.contains(address["value"])
    for kind in ("Accepted", "Programmed"):
        found = condition_of(gateway["status"]["conditions"], kind)
        assert (found["status"], found["reason"], found["observedGeneration"]) == ("True", kind, 1)
    [listener] = gateway["status"]["listeners"]
    assert (listener["name"], listener["attachedRoutes"]) == ("http", 1)
    parent = route_parent(store)
    assert parent is not None
    assert parent["parentRef"] == {"name": "gw"}
    accepted = condition_of(parent["conditions"], "Accepted")
    assert (accepted["status"], accepted["observedGeneration"]) == ("True", 1)

    counts = await count_backends(http, await gateway_url(network, eventually) + "/", 2000)
    assert counts["blue"] + counts["green"] == 2000
    assert abs(counts["blue"] / 2000 - 0.80) <= 0.05


async def test_weight_changes_under_continuous_load_fail_no_request_and_apply_within_100_ms(
    network: Network, make_backend, make_pod, free_cluster_ip, http: aiohttp.ClientSession, eventually
) -> None:
    store = network.store
    await serve_pods(network, make_backend, make_pod, free_cluster_ip, ["old", "new"])
    store.create(GATEWAY_API_VERSION, "Gateway", gateway_manifest())
    store.create(GATEWAY_API_VERSION, "HTTPRoute", route_manifest([("old", 100), ("new", 0)]))
    await eventually(lambda: resolved_refs(store) == ("True", "ResolvedRefs"))
    url = await gateway_url(network, eventually) + "/"

    answers: list[tuple[float, str]] = []  # (time the request was sent, backend that answered)
    failures: list[str] = []
    stop = asyncio.Event()

    async def client() -> None:
        while not stop.is_set():
            sent = time.monotonic()
            try:
                async with http.get(url) as response:
                    body = await response.text()
                    if response.status != 200:
                        failures.append(f"{response.status} {body}")
                    else:
                        answers.append((sent, body.split()[0]))
            except aiohttp.ClientError as error:
                failures.append(repr(error))

    clients = [asyncio.create_task(client()) for _ in range(8)]
    changed_at = []
    for weights in ([90, 10], [50, 50], [10, 90], [0, 100]):
        await eventually(lambda: len(answers) >= 50 * (len(changed_at) + 1))
        backend_refs = [
            {"name": "old", "port": 8000, "weight": weights[0]},
            {"name": "new", "port": 8000, "weight": weights[1]},
        ]
        store.patch(
            GATEWAY_API_VERSION,
            "HTTPRoute",
            "default",
            "rt",
            {"spec": {"rules": [{"backendRefs": backend_refs}]}},
            MERGE,
        )
        changed_at.append(time.monotonic())
    await eventually(lambda: sum(1 for sent, _ in answers if sent > changed_at[-1] + 0.1) >= 100)
    stop.set()
    await asyncio.gather(*clients)

    assert failures == []
    late_old = [
        sent - changed_at[-1] for sent, name in answers if name == "old" and sent > changed_at[-1] + 0.1
    ]
    assert late_old == [], "requests sent 100 ms after the switch to 0/100 still reached the old backend"
    generation = store.get(GATEWAY_API_VERSION, "HTTPRoute", "default", "rt")["metadata"]["generation"]
    parent = route_parent(store)
    assert parent is not None
    assert condition_of(parent["conditions"], "Accepted")["observedGeneration"] == generation


async def test_missing_backend_service_is_reported_and_gets_no_traffic(
    network: Network, make_backend, make_pod, free_cluster_ip, http: aiohttp.ClientSession, eventually
) -> None:
    store = network.store
    await serve_pods(network, make_backend, make_pod, free_cluster_ip, ["present"])
    store.create(GATEWAY_API_VERSION, "Gateway", gateway_manifest())
    store.create(GATEWAY_API_VERSION, "HTTPRoute", route_manifest([("present", 50), ("later", 50)]))
    await eventually(lambda: resolved_refs(store) == ("False", "BackendNotFound"))
    url = await gateway_url(network, eventually) + "/"
    counts = await count_backends(http, url, 100)
    assert counts == {"present": 100}

    await serve_pods(network, make_backend, make_pod, free_cluster_ip, ["later"])
    await eventually(lambda: resolved_refs(store) == ("True", "ResolvedRefs"))
    await eventually(lambda: network.services.listen_address("default", "later", 8000) is not None)
    counts = await count_backends(http, url, 100)
    assert counts == {"present": 50, "later": 50}


async def test_deleting_the_gateway_stops_its_proxy_and_frees_its_address(
    network: Network, make_backend, make_pod, free_cluster_ip, eventually
) -> None:
    store = network.store
    store.create(GATEWAY_API_VERSION, "Gateway", gateway_manifest())
    store.create(GATEWAY_API_VERSION, "HTTPRoute", route_manifest([("nothing", 1)]))
    url = await gateway_url(network, eventually)
    address = store.get(GATEWAY_API_VERSION, "Gateway", "default", "gw")["status"]["addresses"][0]["value"]
    async with aiohttp.ClientSession() as session, session.get(url + "/x") as response:
        assert response.status == 503  # the only backend is missing: the route exists, no backend to pick

    store.delete(GATEWAY_API_VERSION, "Gateway", "default", "gw")
    await eventually(lambda: network.gateways.listen_address("default", "gw", 80) is None)
    assert not network.gateways.pool.in_use(address)
    await eventually(
        lambda: condition_of(route_parent(store)["conditions"], "Accepted")["reason"] == "NoMatchingParent"
    )


async def test_service_selector_switch_behind_the_gateway_moves_traffic_without_failures(
    network: Network, make_backend, make_pod, free_cluster_ip, http: aiohttp.ClientSession, eventually
) -> None:
    """A RayService upgrade without incremental upgrade: its serve Service re-pointed from old pods to new."""
    store = network.store
    await serve_pods(network, make_backend, make_pod, free_cluster_ip, ["old", "new"])
    serve_svc = service("serve-svc", free_cluster_ip(), selector={"app": "old"})
    serve_svc["spec"]["ports"] = [{"name": "serve", "port": 8000, "targetPort": "serve"}]
    store.create("v1", "Service", serve_svc)
    store.create(GATEWAY_API_VERSION, "Gateway", gateway_manifest())
    store.create(GATEWAY_API_VERSION, "HTTPRoute", route_manifest([("serve-svc", 1)]))
    await eventually(lambda: resolved_refs(store) == ("True", "ResolvedRefs"))
    url = await gateway_url(network, eventually) + "/predict"

    answers: list[tuple[float, str]] = []
    failures: list[str] = []
    stop = asyncio.Event()

    async def client() -> None:
        while not stop.is_set():
            sent = time.monotonic()
            try:
                async with http.post(url, data=b'{"x": 1}') as response:
                    body = await response.text()
                    if response.status == 200:
                        answers.append((sent, body.split()[0]))
                    else:
                        failures.append(body)
            except aiohttp.ClientError as error:
                failures.append(repr(error))

    clients = [asyncio.create_task(client()) for _ in range(4)]
    await eventually(lambda: len(answers) >= 50)
    store.patch("v1", "Service", "default", "serve-svc", {"spec": {"selector": {"app": "new"}}}, MERGE)
    switched_at = time.monotonic()
    await eventually(lambda: sum(1 for sent, _ in answers if sent > switched_at + 0.1) >= 50)
    store.delete("v1", "Pod", "default", "old")
    await eventually(lambda: sum(1 for sent, _ in answers if sent > switched_at + 0.1) >= 100)
    stop.set()
    await asyncio.gather(*clients)

    assert failures == []
    assert {name for sent, name in answers if sent > switched_at + 0.1} == {"new"}


async def test_a_listener_has_its_routes_before_it_accepts_its_first_connection(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy bound before its routes are set answers 404 to whatever arrives in between."""
    store.create("v1", "Service", service("a"))
    store.create(GATEWAY_API_VERSION, "HTTPRoute", route_manifest([("a", None)]))
    store.create(GATEWAY_API_VERSION, "Gateway", gateway_manifest())
    routes_when_bound: list[tuple[ProxyRoute, ...]] = []

    async def bind(listener: WeightedHttpProxy) -> bool:
        routes_when_bound.append(listener.routes)
        return True

    monkeypatch.setattr(gateway_controller, "start_listener", bind)
    controller = GatewayController(store, AddressPool(f"127.0.2.{random.randrange(8, 16) * 16}/28"))
    await controller.reconcile()
    assert [len(routes) for routes in routes_when_bound] == [1]
    assert controller.listen_address("default", "gw", 80) is not None
