"""Gateway API decisions: KubeRay's createGateway, createHTTPRoute, reconcileHTTPRoute,
GetWeightsFromHTTPRoute, IsGatewayReady, IsHTTPRouteReady and IsHTTPRouteEqual tables."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.raycluster import RayCluster
from models.rayservice import RayService
from workflows.decisions.rayservice.upgrade.gateway import (
    RouteBackend,
    desired_http_route,
    gateway_manifest,
    gateway_update,
    http_route_manifest,
    http_route_update,
    is_gateway_equal,
    is_gateway_ready,
    is_http_route_equal,
    is_http_route_ready,
    weights_from_http_route,
)
from workflows.decisions.rayservice.upgrade.incremental import TrafficMoment

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(seconds=31)  # more than intervalSeconds (30) ago


def rayservice(
    options: bool = True,
    pending_capacity: int = 30,
    last: datetime | None = None,
    pending_name: str = "pending-ray-cluster",
) -> RayService:
    strategy: dict[str, Any] = {"type": "NewClusterWithIncrementalUpgrade"}
    if options:
        strategy["clusterUpgradeOptions"] = {
            "stepSizePercent": 10,
            "intervalSeconds": 30,
            "gatewayClassName": "istio",
        }
    return RayService.model_validate(
        {
            "metadata": {"name": "test-rayservice", "namespace": "test-ns"},
            "spec": {
                "upgradeStrategy": strategy,
                "rayClusterConfig": {
                    "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}}
                },
            },
            "status": {
                "activeServiceStatus": {
                    "rayClusterName": "active-ray-cluster",
                    "trafficRoutedPercent": 100,
                    "targetCapacity": 100,
                },
                "pendingServiceStatus": {
                    "rayClusterName": pending_name,
                    "trafficRoutedPercent": 0,
                    "targetCapacity": pending_capacity,
                    **({"lastTrafficMigratedTime": last.isoformat()} if last else {}),
                },
            },
        }
    )


def cluster(name: str) -> RayCluster:
    return RayCluster.model_validate(
        {"metadata": {"name": name, "namespace": "test-ns"}, "spec": {"headGroupSpec": {"template": {}}}}
    )


ACTIVE, PENDING = cluster("active-ray-cluster"), cluster("pending-ray-cluster")


def test_create_gateway() -> None:
    gateway = gateway_manifest(rayservice())
    assert gateway["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert (gateway["metadata"]["name"], gateway["metadata"]["namespace"]) == (
        "test-rayservice-gateway",
        "test-ns",
    )
    assert gateway["metadata"]["labels"]["ray.io/originated-from-cr-name"] == "test-rayservice"
    assert gateway["spec"] == {
        "gatewayClassName": "istio",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
    }
    with pytest.raises(ValueError, match=r"Missing RayService ClusterUpgradeOptions during upgrade\."):
        gateway_manifest(rayservice(options=False))


def test_gateway_update_only_when_class_or_listeners_differ() -> None:
    existing = gateway_manifest(rayservice())
    existing["status"] = {"conditions": [{"type": "Programmed", "status": "True"}]}
    assert gateway_update(existing, gateway_manifest(rayservice())) is None
    changed = copy.deepcopy(existing)
    changed["spec"]["gatewayClassName"] = "envoy"
    updated = gateway_update(changed, gateway_manifest(rayservice()))
    assert updated is not None
    assert updated["spec"]["gatewayClassName"] == "istio"
    assert updated["status"] == existing["status"]  # only the spec is replaced


def listener_changed(field: str, value: Any) -> dict[str, Any]:
    changed = gateway_manifest(rayservice())
    changed["spec"]["listeners"][0][field] = value
    return changed


@pytest.mark.parametrize(
    ("existing", "equal"),
    [
        (listener_changed("name", "other"), False),
        (listener_changed("protocol", "HTTPS"), False),
        (listener_changed("port", 8080), False),
        (listener_changed("hostname", "example.com"), True),  # not a field raypilot manages
        ({"spec": {"gatewayClassName": "istio"}}, False),  # no listeners
    ],
    ids=["name", "protocol", "port", "unmanaged field", "no listeners"],
)
def test_is_gateway_equal_compares_listeners_by_name_protocol_and_port(
    existing: dict[str, Any], equal: bool
) -> None:
    assert is_gateway_equal(existing, gateway_manifest(rayservice())) is equal


def backends(route: dict[str, Any] | None) -> list[tuple[str, int]]:
    assert route is not None
    return [(ref["name"], ref["weight"]) for ref in route["spec"]["rules"][0]["backendRefs"]]


@pytest.mark.parametrize(
    ("last", "ready", "pending_capacity", "expected"),
    [
        (LONG_AGO, False, 30, (100, 0)),  # pending cluster not ready: no shift
        (NOW, True, 30, (100, 0)),  # interval not elapsed yet
        (LONG_AGO, True, 60, (90, 10)),
        (LONG_AGO, True, 5, (95, 5)),  # capped at the pending target capacity
    ],
)
def test_create_http_route(
    last: datetime, ready: bool, pending_capacity: int, expected: tuple[int, int]
) -> None:
    rs = rayservice(pending_capacity=pending_capacity, last=last)
    options = rs.spec.upgrade_strategy.cluster_upgrade_options if rs.spec.upgrade_strategy else None
    route, _ = desired_http_route(rs, ACTIVE, PENDING, TrafficMoment(options, NOW, pending_ready=ready))
    assert route is not None
    assert route["metadata"]["name"] == "test-rayservice-httproute"
    assert route["metadata"]["namespace"] == "test-ns"
    assert backends(route) == [
        ("active-ray-cluster-serve-svc", expected[0]),
        ("pending-ray-cluster-serve-svc", expected[1]),
    ]
    assert route["spec"]["rules"][0]["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert {ref["port"] for ref in route["spec"]["rules"][0]["backendRefs"]} == {8000}


def test_create_http_route_without_options_fails() -> None:
    with pytest.raises(ValueError, match=r"ClusterUpgradeOptions are not set during upgrade\."):
        desired_http_route(
            rayservice(options=False), ACTIVE, PENDING, TrafficMoment(None, NOW, pending_ready=True)
        )


def test_create_http_route_without_pending_cluster_has_one_backend() -> None:
    rs = rayservice(pending_name="")
    options = rs.spec.upgrade_strategy.cluster_upgrade_options if rs.spec.upgrade_strategy else None
    route, _ = desired_http_route(rs, ACTIVE, None, TrafficMoment(options, NOW, pending_ready=False))
    assert backends(route) == [("active-ray-cluster-serve-svc", 100)]
    no_route, step = desired_http_route(rs, None, None, TrafficMoment(options, NOW, pending_ready=False))
    assert no_route is None  # no active cluster: KubeRay skips the route
    assert (step.active_weight, step.pending_weight) == (100, 0)


@pytest.mark.parametrize(
    ("pending", "ready", "last", "existing", "expected"),
    [
        (False, False, None, False, [100]),  # no pending cluster
        (True, False, None, False, [100, 0]),  # pending not ready
        (True, True, None, False, [90, 10]),  # create with the first step
        (True, True, None, True, [90, 10]),  # update
        (True, True, LONG_AGO, True, [90, 10]),  # interval elapsed: update
        (True, True, NOW, True, [100, 0]),  # interval not elapsed: nothing to update
    ],
)
def test_reconcile_http_route(
    pending: bool, ready: bool, last: datetime | None, existing: bool, expected: list[int]
) -> None:
    rs = rayservice(pending_capacity=100, last=last, pending_name="pending-ray-cluster" if pending else "")
    options = rs.spec.upgrade_strategy.cluster_upgrade_options if rs.spec.upgrade_strategy else None
    route, _ = desired_http_route(
        rs, ACTIVE, PENDING if pending else None, TrafficMoment(options, NOW, pending_ready=ready)
    )
    assert route is not None
    assert [weight for _, weight in backends(route)] == expected
    assert route["spec"]["parentRefs"] == [{"name": "test-rayservice-gateway", "namespace": "test-ns"}]
    if existing:
        current = http_route_manifest(
            rs,
            RouteBackend("active-ray-cluster", 8000, 100),
            RouteBackend("pending-ray-cluster", 8000, 0) if pending else None,
        )
        current["metadata"]["resourceVersion"] = "9"
        updated = http_route_update(current, route)
        if expected == [100, 0]:
            assert updated is None  # equal: no write
        else:
            assert updated is not None
            assert updated["metadata"]["resourceVersion"] == "9"
            assert [weight for _, weight in backends(updated)] == expected


def route_with(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"rules": [{"backendRefs": list(refs)}]}}


@pytest.mark.parametrize(
    ("route", "active", "pending", "expected"),
    [
        (None, "active", "pending", (-1, -1)),
        ({"spec": {"rules": [{}]}}, "active", "pending", (-1, -1)),  # a rule without backends
        ({"spec": {}}, "active", "pending", (-1, -1)),
        (
            route_with(
                {"name": "active-serve-svc", "weight": 80}, {"name": "pending-serve-svc", "weight": 20}
            ),
            "active",
            "pending",
            (80, 20),
        ),
        (route_with({"name": "active-serve-svc", "weight": 100}), "active", "pending", (100, -1)),
        (route_with({"name": "pending-serve-svc", "weight": 100}), "", "pending", (-1, 100)),
        (route_with({"name": "active-serve-svc"}), "active", "", (0, -1)),  # no weight: 0
    ],
)
def test_get_weights_from_http_route(
    route: dict[str, Any] | None, active: str, pending: str, expected: tuple[int, int]
) -> None:
    assert weights_from_http_route(route, active, pending) == expected


def conditions(*true_types: str) -> list[dict[str, str]]:
    return [{"type": t, "status": "True"} for t in true_types] + [{"type": "ResolvedRefs", "status": "False"}]


@pytest.mark.parametrize(
    ("gateway", "expected"),
    [
        (None, False),
        ({"status": {"conditions": conditions("Programmed")}}, False),
        ({"status": {"conditions": conditions("Accepted")}}, False),
        ({"status": {"conditions": conditions("Accepted", "Programmed")}}, True),
        ({"status": {}}, False),
    ],
)
def test_is_gateway_ready(gateway: dict[str, Any] | None, expected: bool) -> None:
    assert is_gateway_ready(gateway) is expected


def route_status(name: str, namespace: str | None, *true_types: str) -> dict[str, Any]:
    ref = {"name": name, **({"namespace": namespace} if namespace is not None else {})}
    parent = {"parentRef": ref, "conditions": [{"type": t, "status": "True"} for t in true_types]}
    return {"status": {"parents": [parent]}}


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        (None, False),
        (route_status("other-gateway", "test-ns", "Accepted", "ResolvedRefs"), False),  # parentRef mismatch
        (route_status("test-rayservice-gateway", "other-ns", "Accepted", "ResolvedRefs"), False),
        (route_status("test-rayservice-gateway", "test-ns", "Accepted"), False),
        (route_status("test-rayservice-gateway", "test-ns", "ResolvedRefs"), False),
        (route_status("test-rayservice-gateway", "test-ns", "Accepted", "ResolvedRefs"), True),
        (
            route_status("test-rayservice-gateway", None, "Accepted", "ResolvedRefs"),
            True,
        ),  # no namespace: any
    ],
)
def test_is_http_route_ready(route: dict[str, Any] | None, expected: bool) -> None:
    assert is_http_route_ready("test-rayservice-gateway", "test-ns", route) is expected


def test_is_http_route_equal_compares_only_managed_fields() -> None:
    desired = http_route_manifest(rayservice(), RouteBackend("a", 8000, 70), RouteBackend("b", 8000, 30))
    defaulted = copy.deepcopy(desired)  # what an API server hands back: defaults filled, status added
    defaulted["spec"]["hostnames"] = []
    defaulted["spec"]["parentRefs"][0].update({"group": "gateway.networking.k8s.io", "kind": "Gateway"})
    for ref in defaulted["spec"]["rules"][0]["backendRefs"]:
        ref.update({"group": "", "kind": "Service"})
    defaulted["status"] = {"parents": []}
    assert is_http_route_equal(defaulted, desired)
    assert is_http_route_equal(None, None)
    assert not is_http_route_equal(None, desired)
    shifted = http_route_manifest(rayservice(), RouteBackend("a", 8000, 60), RouteBackend("b", 8000, 40))
    assert not is_http_route_equal(defaulted, shifted)
    other_port = http_route_manifest(rayservice(), RouteBackend("a", 8001, 70), RouteBackend("b", 8000, 30))
    assert not is_http_route_equal(desired, other_port)
    one_backend = http_route_manifest(rayservice(), RouteBackend("a", 8000, 100))
    assert not is_http_route_equal(desired, one_backend)
    no_weight = copy.deepcopy(one_backend)
    del no_weight["spec"]["rules"][0]["backendRefs"][0]["weight"]
    assert not is_http_route_equal(no_weight, one_backend)  # a missing weight counts as 1, not 100


def route_changed(change: str) -> dict[str, Any]:
    route = http_route_manifest(rayservice(), RouteBackend("a", 8000, 70), RouteBackend("b", 8000, 30))
    spec = route["spec"]
    rule = spec["rules"][0]
    if change == "parent namespace":
        spec["parentRefs"][0]["namespace"] = "other-ns"
    elif change == "parent namespace left out":
        spec["parentRefs"][0].pop("namespace")
    elif change == "extra parent":
        spec["parentRefs"].append({"name": "second-gateway"})
    elif change == "no filters":
        rule["filters"] = None
    elif change == "a filter":
        rule["filters"] = [{"type": "RequestHeaderModifier"}]
    elif change == "matches":
        rule["matches"] = [{"path": {"type": "Exact", "value": "/"}}]
    elif change == "backend namespace":
        rule["backendRefs"][0]["namespace"] = "other-ns"
    elif change == "backend port left out":
        rule["backendRefs"][0].pop("port")
    elif change == "extra rule":
        spec["rules"].append(copy.deepcopy(rule))
    return route


@pytest.mark.parametrize(
    ("change", "equal"),
    [
        ("parent namespace", False),
        ("parent namespace left out", False),  # the manifest names the RayService's namespace
        ("extra parent", False),
        ("no filters", True),  # nil and empty filters are the same list
        ("a filter", False),
        ("matches", False),
        ("backend namespace", False),
        ("backend port left out", False),  # a missing port counts as 0
        ("extra rule", False),
    ],
)
def test_is_http_route_equal_field_by_field(change: str, equal: bool) -> None:
    desired = http_route_manifest(rayservice(), RouteBackend("a", 8000, 70), RouteBackend("b", 8000, 30))
    assert is_http_route_equal(route_changed(change), desired) is equal
