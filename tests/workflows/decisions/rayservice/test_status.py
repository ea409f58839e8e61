"""calculateStatus as one pure pass: first deployment, blue/green switch, incremental weights read
back, rollback completion followed by a fresh upgrade, and the promotion rule
(reconcilePromotionAndServingStatus)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.hashing import cluster_hash_annotations
from models.meta import find_condition
from models.operator import OperatorConfig
from models.raycluster import RayCluster
from models.rayservice import RayService, RayServiceStatuses
from tests.workflows.decisions.rayservice.conditions import the_condition
from workflows.decisions.rayservice.status import (
    StatusInputs,
    StatusOutcome,
    calculate_status,
    rayservice_serve_service_name,
    serve_endpoint_services,
    should_promote,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
CONFIG = OperatorConfig()
INCREMENTAL = {
    "type": "NewClusterWithIncrementalUpgrade",
    "clusterUpgradeOptions": {"stepSizePercent": 25, "intervalSeconds": 10, "gatewayClassName": "istio"},
}


def cluster_spec(ray_version: str) -> dict[str, Any]:
    return {
        "rayVersion": ray_version,
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}},
    }


def rayservice(
    ray_version: str = "2.60.0", strategy: dict[str, Any] | None = None, status: dict[str, Any] | None = None
) -> RayService:
    spec: dict[str, Any] = {"rayClusterConfig": cluster_spec(ray_version)}
    if strategy:
        spec["upgradeStrategy"] = strategy
    return RayService.model_validate(
        {
            "metadata": {"name": "svc", "namespace": "ns", "generation": 2},
            "spec": spec,
            "status": status or {},
        }
    )


def cluster(name: str, ray_version: str = "2.60.0", head_ready: bool = True) -> RayCluster:
    built = RayCluster.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns"},
            "spec": cluster_spec(ray_version),
            "status": {"conditions": [{"type": "HeadPodReady", "status": str(head_ready), "reason": "X"}]},
        }
    )
    built.metadata.annotations = cluster_hash_annotations(built.spec)
    return built


def one_pass(rs: RayService, seed: int = 1, **observed: Any) -> StatusOutcome:
    """calculateStatus at NOW with the default config; `observed`: the rest of StatusInputs."""
    return calculate_status(
        StatusInputs(rayservice=rs, config=CONFIG, now=NOW, rand=random.Random(seed), **observed)
    )


def split_route(active_weight: int, pending_weight: int) -> dict[str, Any]:
    """The HTTPRoute of an incremental upgrade from svc-a (active) to svc-b (pending)."""
    backends = [
        {"name": "svc-a-serve-svc", "weight": active_weight},
        {"name": "svc-b-serve-svc", "weight": pending_weight},
    ]
    return {"spec": {"rules": [{"backendRefs": backends}]}}


def a_active_b_pending() -> dict[str, Any]:
    """Mid-upgrade clusters: svc-a (2.60.0) active, svc-b (2.61.0) pending, Serve reconciled on both."""
    return {
        "active": cluster("svc-a"),
        "pending": cluster("svc-b", "2.61.0"),
        "active_applications": {},
        "pending_applications": {},
    }


def condition(status: RayServiceStatuses, condition_type: str) -> tuple[str, str]:
    found = the_condition(status.conditions, condition_type)
    return found.status.value, found.reason


def test_a_new_rayservice_chooses_its_first_cluster() -> None:
    outcome = one_pass(rayservice(), seed=7)
    name = outcome.new_pending_cluster
    assert name is not None
    assert name.startswith("svc-")
    assert len(name) == 9
    assert (
        outcome.new_pending_cluster == one_pass(rayservice(), seed=7).new_pending_cluster
    )  # deterministic for the same random source (replay-safe)
    status = outcome.status
    assert status.pending_service_status.ray_cluster_name == name
    assert status.pending_service_status.target_capacity is None  # only incremental upgrades set it
    assert status.observed_generation == 2
    assert condition(status, "Ready") == ("False", "Initializing")
    assert condition(status, "UpgradeInProgress") == ("False", "Initializing")
    assert (status.service_status, status.num_serve_endpoints) == ("", 0)


def test_first_incremental_cluster_starts_at_full_capacity() -> None:
    rs = rayservice(strategy=INCREMENTAL)
    outcome = one_pass(rs)
    assert outcome.status.pending_service_status.target_capacity == 100


def test_first_deployment_is_promoted_once_the_services_select_it() -> None:
    rs = rayservice(
        status={
            "pendingServiceStatus": {"rayClusterName": "svc-first"},
            "conditions": [{"type": "Ready", "status": "False", "reason": "Initializing"}],
        }
    )
    apps = {"app": {"status": "RUNNING"}}
    outcome = one_pass(
        rs,
        pending=cluster("svc-first"),
        pending_applications=apps,
        services_cluster="svc-first",
        serve_endpoints={"svc-serve-svc": 2},
    )
    status = outcome.status
    assert outcome.promoted is True
    assert outcome.is_pending_cluster_serving is True
    assert outcome.new_pending_cluster is None
    assert status.active_service_status.ray_cluster_name == "svc-first"
    assert status.active_service_status.application_statuses["app"].status == "RUNNING"
    assert status.pending_service_status.ray_cluster_name == ""
    assert status.num_serve_endpoints == 2
    assert condition(status, "Ready") == ("True", "NonZeroServeEndpoints")
    assert condition(status, "UpgradeInProgress") == ("False", "NoPendingCluster")
    assert status.service_status == "Running"


def test_blue_green_upgrade_then_switch() -> None:
    serving = {
        "activeServiceStatus": {"rayClusterName": "svc-old"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "NonZeroServeEndpoints"}],
    }
    rs = rayservice("2.61.0", status=serving)
    old = cluster("svc-old", "2.60.0")
    prepared = one_pass(
        rs,
        seed=3,
        active=old,
        active_applications={},
        services_cluster="svc-old",
        serve_endpoints={"svc-serve-svc": 1},
    )
    new_name = prepared.new_pending_cluster
    assert new_name is not None
    assert prepared.promoted is False
    assert condition(prepared.status, "UpgradeInProgress") == ("True", "BothActivePendingClustersExist")

    upgrading = rs.model_copy(update={"status": prepared.status})
    switched = one_pass(
        upgrading,
        seed=3,
        active=old,
        pending=cluster(new_name, "2.61.0"),
        pending_applications={},
        services_cluster=new_name,
        serve_endpoints={"svc-serve-svc": 1},
    )
    assert switched.promoted is True
    assert switched.new_pending_cluster is None
    assert switched.status.active_service_status.ray_cluster_name == new_name
    assert switched.status.pending_service_status.ray_cluster_name == ""
    assert condition(switched.status, "UpgradeInProgress") == ("False", "NoPendingCluster")


def test_incremental_weights_are_read_back_with_their_migration_time() -> None:
    earlier = NOW - timedelta(seconds=30)
    status = {
        "conditions": [
            {"type": "UpgradeInProgress", "status": "True", "reason": "BothActivePendingClustersExist"}
        ],
        "activeServiceStatus": {
            "rayClusterName": "svc-a",
            "targetCapacity": 100,
            "trafficRoutedPercent": 100,
            "lastTrafficMigratedTime": earlier.isoformat(),
        },
        "pendingServiceStatus": {"rayClusterName": "svc-b", "targetCapacity": 50, "trafficRoutedPercent": 0},
    }
    rs = rayservice("2.61.0", INCREMENTAL, status)
    endpoints = {"svc-a-serve-svc": 2, "svc-b-serve-svc": 1, "svc-serve-svc": 9}

    def pass_with_route_weights(active_weight: int, pending_weight: int) -> StatusOutcome:
        route = split_route(active_weight, pending_weight)
        return one_pass(
            rs, **a_active_b_pending(), services_cluster="svc-a", serve_endpoints=endpoints, http_route=route
        )

    outcome = pass_with_route_weights(75, 25)
    active, pending = outcome.status.active_service_status, outcome.status.pending_service_status
    assert (active.traffic_routed_percent, active.last_traffic_migrated_time) == (75, NOW)
    assert (pending.traffic_routed_percent, pending.last_traffic_migrated_time) == (25, NOW)
    assert outcome.promoted is False
    assert outcome.status.num_serve_endpoints == 3  # both per-cluster Services, not the RayService-level one

    again = pass_with_route_weights(100, 0)
    assert again.status.active_service_status.last_traffic_migrated_time == earlier
    assert again.status.pending_service_status.last_traffic_migrated_time is None  # 0 -> 0: no migration


def test_rollback_completion_then_a_fresh_upgrade_for_a_third_spec() -> None:
    status = {
        "conditions": [
            {"type": "UpgradeInProgress", "status": "True", "reason": "BothActivePendingClustersExist"},
            {"type": "RollbackInProgress", "status": "True", "reason": "DesiredClusterSpecChanged"},
        ],
        "activeServiceStatus": {
            "rayClusterName": "svc-a",
            "targetCapacity": 100,
            "trafficRoutedPercent": 100,
        },
        "pendingServiceStatus": {"rayClusterName": "svc-b", "targetCapacity": 0, "trafficRoutedPercent": 0},
    }
    rs = rayservice("2.62.0", INCREMENTAL, status)  # spec C; active runs A (2.60.0), pending B (2.61.0)
    outcome = one_pass(rs, seed=5, **a_active_b_pending())
    assert find_condition(outcome.status.conditions, "RollbackInProgress") is None
    assert outcome.new_pending_cluster not in (None, "svc-b")
    assert outcome.status.pending_service_status.ray_cluster_name == outcome.new_pending_cluster
    assert outcome.status.pending_service_status.target_capacity == 0  # an upgrade starts at 0
    assert condition(outcome.status, "UpgradeInProgress") == ("True", "BothActivePendingClustersExist")


@pytest.mark.parametrize(
    ("incremental", "conditions", "services", "active", "pending", "pending_exists", "expected"),
    [
        (False, [], "b", "a", "b", True, True),  # blue/green: the Services moved
        (False, [], "a", "a", "b", True, False),
        (True, [], "b", "", "b", True, True),  # incremental first deployment
        (True, ["UpgradeInProgress"], "a", "a", "b", True, False),  # capacity/traffic not done
        (True, ["UpgradeInProgress", "RollbackInProgress"], "a", "a", "b", True, False),
    ],
)
def test_should_promote(
    incremental: bool,
    conditions: list[str],
    services: str,
    active: str,
    pending: str,
    pending_exists: bool,
    expected: bool,
) -> None:
    status = RayServiceStatuses.model_validate(
        {
            "conditions": [{"type": t, "status": "True", "reason": "X"} for t in conditions],
            "activeServiceStatus": {"rayClusterName": active, "targetCapacity": 50},
            "pendingServiceStatus": {"rayClusterName": pending, "trafficRoutedPercent": 50},
        }
    )
    assert should_promote(status, services, incremental, pending_exists) is expected


def test_should_promote_when_incremental_upgrade_is_complete() -> None:
    status = RayServiceStatuses.model_validate(
        {
            "conditions": [{"type": "UpgradeInProgress", "status": "True", "reason": "X"}],
            "activeServiceStatus": {"rayClusterName": "a", "targetCapacity": 0},
            "pendingServiceStatus": {"rayClusterName": "b", "trafficRoutedPercent": 100},
        }
    )
    assert should_promote(status, "a", incremental=True, pending_cluster_exists=True) is True
    with pytest.raises(ValueError, match="not equal to pendingCluster or activeCluster"):
        should_promote(status, "zzz", incremental=True, pending_cluster_exists=True)


def test_serve_endpoint_services() -> None:
    assert serve_endpoint_services(rayservice(), None, None, CONFIG) == ["svc-serve-svc"]
    incremental = rayservice(strategy=INCREMENTAL)
    assert serve_endpoint_services(incremental, cluster("svc-a"), cluster("svc-b"), CONFIG) == [
        "svc-a-serve-svc",
        "svc-b-serve-svc",
    ]
    custom = RayService.model_validate(
        {
            "metadata": {"name": "svc"},
            "spec": {"rayClusterConfig": cluster_spec("1"), "serveService": {"metadata": {"name": "mine"}}},
        }
    )
    assert rayservice_serve_service_name(custom) == "mine"
