"""What the RayService workflow decides beyond KubeRay's reconcile: generations, continue-as-new, status
stamping, deadlines, watches, the `status` query, in-place update requests, manifests and gates."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from models.features import FeatureGates
from models.raycluster import RayCluster
from models.rayservice import RayServiceConditionType, RayServiceStatuses, RayServiceUpgradeType
from workflows.decisions.rayservice.cluster import in_place_update_request
from workflows.decisions.rayservice.continue_as_new import should_continue_as_new
from workflows.decisions.rayservice.manifest import (
    manifest_error,
    manifest_update_error,
    next_generation,
    rayservice_at,
    with_gated_upgrade_strategy,
)
from workflows.decisions.rayservice.observed_clusters import (
    cluster_from_object,
    cluster_names,
    clusters_to_forget,
    dashboard_port,
    head_service_of,
    is_head_pod_ready,
)
from workflows.decisions.rayservice.serve import serve_update_event
from workflows.decisions.rayservice.services import head_serve_label_change
from workflows.decisions.rayservice.status_view import (
    current_details,
    stamp_status_update,
    status_query,
)
from workflows.decisions.rayservice.upgrade_status import (
    default_target_capacities,
    should_finish_aborted_upgrade,
)
from workflows.decisions.rayservice.watches import (
    Watch,
    desired_watches,
    earliest_deadline,
    serve_wait_is_quiet,
    view_key,
)
from workflows.rayservice.calls import RayServiceCalls
from workflows.rayservice.world import RayServiceWorld

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
SERVE_CONFIG = "applications:\n  - name: app\n    import_path: sandbox.apps.versioned:app\n"


def manifest(name: str = "svc", version: str = "v1", **spec: Any) -> dict[str, Any]:
    head = {
        "name": "ray-head",
        "image": "rayproject/ray:2.60.0",
        "env": [{"name": "APP_VERSION", "value": version}],
        "ports": [{"name": "dashboard", "containerPort": 8265}, {"name": "serve", "containerPort": 8000}],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "serveConfigV2": SERVE_CONFIG,
            "rayClusterConfig": {
                "rayVersion": "2.60.0",
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
            },
            **spec,
        },
    }


def statuses(active: str = "", pending: str = "", **fields: Any) -> RayServiceStatuses:
    return RayServiceStatuses.model_validate(
        {
            "activeServiceStatus": {"rayClusterName": active},
            "pendingServiceStatus": {"rayClusterName": pending},
            **fields,
        }
    )


def cluster(name: str = "svc-abc", *, head_ready: bool | None = None, state: str = "") -> RayCluster:
    conditions = [] if head_ready is None else [{"type": "HeadPodReady", "status": str(head_ready)}]
    return RayCluster.model_validate(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": manifest()["spec"]["rayClusterConfig"],
            "status": {"state": state, "conditions": conditions},
        }
    )


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (manifest(), 3),
        ({**manifest(), "metadata": {"name": "svc", "namespace": "default", "labels": {"a": "b"}}}, 3),
        (manifest(version="v2"), 4),
    ],
    ids=["same spec", "metadata only", "spec changed"],
)
def test_next_generation_moves_only_with_the_spec(new: dict[str, Any], expected: int) -> None:
    assert next_generation(manifest(), new, 3) == expected


def test_rayservice_at_carries_generation_and_status() -> None:
    status = statuses("svc-a")
    rayservice = rayservice_at(manifest(), 7, status)
    assert rayservice.metadata.generation == 7
    assert rayservice.status is status
    assert rayservice.spec.serve_config_v2 == SERVE_CONFIG


@pytest.mark.parametrize(
    ("suggested", "length", "limit", "build_changed", "expected"),
    [
        (True, 10, None, False, True),
        (False, 10, None, False, False),
        (False, 99, 100, False, False),
        (False, 100, 100, False, True),
        (False, 10, None, True, True),  # a new current build of raypilot: move to it
    ],
)
def test_should_continue_as_new(
    suggested: bool, length: int, limit: int | None, build_changed: bool, expected: bool
) -> None:
    assert should_continue_as_new(suggested, length, limit, build_changed) is expected


def test_an_unchanged_status_keeps_its_last_update_time_and_a_changed_one_is_stamped() -> None:
    earlier = NOW - timedelta(minutes=5)
    old = statuses("svc-a").model_copy(update={"last_update_time": earlier})
    same = statuses("svc-a")
    assert stamp_status_update(old, same, NOW).last_update_time == earlier
    changed = statuses("svc-a", num_serve_endpoints=1)
    stamped = stamp_status_update(old, changed, NOW)
    assert stamped.last_update_time == NOW
    assert stamped.num_serve_endpoints == 1


@pytest.mark.parametrize(
    ("deadlines", "expected"),
    [((), None), ((None, None), None), ((NOW, None, NOW - timedelta(1)), NOW - timedelta(1))],
)
def test_earliest_deadline(deadlines: tuple[datetime | None, ...], expected: datetime | None) -> None:
    assert earliest_deadline(*deadlines) == expected


@pytest.mark.parametrize(
    ("observed", "gate", "expected"),
    [
        (None, True, False),
        (cluster(head_ready=True), True, True),
        (cluster(head_ready=False, state="ready"), True, False),
        (cluster(head_ready=None, state="ready"), False, True),
        (cluster(head_ready=True, state=""), False, False),
    ],
    ids=["no cluster", "condition true", "condition false", "gate off: state", "gate off: no state"],
)
def test_is_head_pod_ready(observed: RayCluster | None, gate: bool, expected: bool) -> None:
    assert is_head_pod_ready(observed, gate) is expected


def test_dashboard_port_is_the_named_port_else_8265() -> None:
    assert dashboard_port(cluster()) == 8265
    renamed = manifest()["spec"]["rayClusterConfig"]
    renamed["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "dashboard", "containerPort": 9999}
    ]
    moved = RayCluster.model_validate({"metadata": {"name": "c"}, "spec": renamed})
    assert dashboard_port(moved) == 9999


def pod(label: str | None) -> dict[str, Any]:
    labels = {} if label is None else {"ray.io/serve": label}
    return {"metadata": {"name": "head", "labels": labels}}


@pytest.mark.parametrize(
    ("head_pod", "exclude", "healthy", "expected"),
    [
        (None, False, True, None),
        (pod(None), False, None, None),
        (pod(None), False, True, "true"),
        (pod("true"), False, True, None),
        (pod("true"), False, False, "false"),
        (pod("true"), True, True, "false"),
        (pod("false"), True, True, None),
    ],
)
def test_head_serve_label_change(
    head_pod: dict[str, Any] | None, exclude: bool, healthy: bool | None, expected: str | None
) -> None:
    assert head_serve_label_change(head_pod, exclude, healthy) == expected


def test_in_place_update_request_replaces_spec_and_metadata_but_keeps_suspend() -> None:
    current = {
        "metadata": {
            "name": "c",
            "namespace": "default",
            "resourceVersion": "42",
            "labels": {"keep": "1", "drop": "x"},
            "annotations": {"hash": "old"},
        },
        "spec": {"suspend": True, "rayVersion": "2.50.0"},
    }
    goal = {
        "metadata": {"name": "c", "namespace": "default", "labels": {"keep": "1", "new": "2"}},
        "spec": {"suspend": False, "rayVersion": "2.60.0"},
    }
    request = in_place_update_request(current, goal)
    assert request.spec == {"rayVersion": "2.60.0", "suspend": True}
    assert request.labels == {"drop": None, "new": "2"}
    assert request.annotations == {"hash": None}


def test_in_place_update_of_another_object_is_refused() -> None:
    with pytest.raises(ValueError, match="different names"):
        in_place_update_request({"metadata": {"name": "a"}}, {"metadata": {"name": "b"}})


def test_view_key_is_stable_across_key_order() -> None:
    assert view_key(None) == ""
    assert view_key({"b": 1, "a": [1, 2]}) == view_key({"a": [1, 2], "b": 1})
    assert view_key({"a": 1}) != view_key({"a": 2})


def test_each_cluster_waits_for_its_head_then_for_serve() -> None:
    serve_view = {"reachable": True}
    watches = desired_watches(
        {"svc-old": cluster("svc-old", head_ready=True), "svc-new": cluster("svc-new"), "gone": None},
        {"svc-old": serve_view},
        [],
        {},
        False,
    )
    assert watches == [Watch("serve", "svc-old", view_key(serve_view)), Watch("head_ready", "svc-new")]


@pytest.mark.parametrize(
    ("expected_endpoints", "counts", "watched"),
    [
        (False, {}, False),
        (True, {}, True),
        (True, {"svc-serve-svc": 0}, True),
        (True, {"svc-serve-svc": 1}, False),
    ],
)
def test_endpoints_are_watched_only_while_expected_and_none_counted(
    expected_endpoints: bool, counts: dict[str, int], watched: bool
) -> None:
    watches = desired_watches({}, {}, ["svc-serve-svc"], counts, expected_endpoints)
    expected = [Watch("endpoints", "svc-serve-svc", view_key({"svc-serve-svc": 0}))] if watched else []
    assert watches == expected


RUNNING_APPS = {"applications": {"a": {"status": "RUNNING"}, "b": {"status": "RUNNING"}}}
ONE_DEPLOYING = {"applications": {"a": {"status": "RUNNING"}, "b": {"status": "DEPLOYING"}}}
ACTIVE = {"metadata": {"name": "svc-a"}}
PENDING = {"metadata": {"name": "svc-b"}}


@pytest.mark.parametrize(
    ("clusters", "serve_view", "quiet"),
    [
        ({"svc-a": ACTIVE}, RUNNING_APPS, True),  # settled: one cluster, every application RUNNING
        ({"svc-a": ACTIVE, "svc-old": None}, RUNNING_APPS, True),  # a cluster already gone does not count
        ({"svc-a": ACTIVE, "svc-b": PENDING}, RUNNING_APPS, False),  # an upgrade (or a drain) in flight
        ({"svc-a": ACTIVE}, ONE_DEPLOYING, False),  # the first deployment, or an application not RUNNING
        ({"svc-a": ACTIVE}, {"reachable": False}, False),  # Serve not answering
        ({"svc-a": ACTIVE}, None, False),  # nothing seen yet
    ],
)
def test_the_serve_wait_heartbeats_once_a_minute_only_on_a_settled_rayservice(
    clusters: dict[str, dict[str, Any] | None], serve_view: dict[str, Any] | None, quiet: bool
) -> None:
    assert serve_wait_is_quiet(clusters, serve_view) is quiet


def serve_details(*replicas: dict[str, Any]) -> dict[str, Any]:
    return {
        "applications": {
            "app": {
                "status": "RUNNING",
                "deployments": {"Model": {"status": "HEALTHY", "replicas": list(replicas)}},
            }
        }
    }


def test_status_query_shows_replicas_with_ranks_under_their_deployment() -> None:
    app = {"status": "RUNNING", "serveDeploymentStatuses": {"Model": {"status": "HEALTHY"}}}
    status = RayServiceStatuses.model_validate(
        {
            "activeServiceStatus": {"rayClusterName": "svc-a", "applicationStatuses": {"app": app}},
            "pendingServiceStatus": {"rayClusterName": "svc-b"},
        }
    )
    details = serve_details(
        {"replica_id": "r2", "state": "RUNNING", "rank": {"rank": 1}, "world_size": 2},
        {"replica_id": "r1", "state": "RUNNING", "rank": {"rank": 0, "node_rank": 0, "local_rank": 0}},
        {"replica_id": "r3", "state": "STARTING"},
    )
    body = status_query(status, {"svc-a": details, "svc-b": details})
    replicas = body["activeServiceStatus"]["applicationStatuses"]["app"]["serveDeploymentStatuses"]["Model"][
        "replicas"
    ]
    assert replicas == [
        {"replicaId": "r1", "state": "RUNNING", "rank": 0, "nodeRank": 0, "localRank": 0},
        {"replicaId": "r2", "state": "RUNNING", "rank": 1, "worldSize": 2},
        {"replicaId": "r3", "state": "STARTING"},
    ]
    # The pending side has no application statuses: nothing is added there.
    assert "applicationStatuses" not in body.get("pendingServiceStatus", {})


def test_cluster_names_and_what_to_forget() -> None:
    assert cluster_names(statuses("svc-a", "svc-b")) == ("svc-a", "svc-b")
    assert cluster_names(statuses()) == ("", "")
    assert clusters_to_forget(["svc-a", "svc-b", "svc-c", "svc-d"], "svc-a", "", ["svc-c"]) == [
        "svc-b",
        "svc-d",
    ]
    assert head_service_of("svc-a") == "svc-a-head-svc"


def test_cluster_from_object_falls_back_to_the_spec_the_workflow_wrote() -> None:
    rayservice = rayservice_at(manifest(), 1, statuses())
    assert cluster_from_object(None, rayservice) is None
    read = {"metadata": {"name": "svc-a", "uid": "u1"}, "spec": manifest()["spec"]["rayClusterConfig"]}
    parsed = cluster_from_object(read, rayservice)
    assert parsed is not None
    assert parsed.metadata.name == "svc-a"
    unknown = copy.deepcopy(read)
    unknown["spec"]["headGroupSpec"]["template"] = "not a pod template"
    unknown["status"] = {"state": "ready"}
    fallback = cluster_from_object(unknown, rayservice)
    assert fallback is not None
    assert fallback.status.state == "ready"
    assert fallback.spec.head_group_spec.template.spec.containers[0].name == "ray-head"


def test_the_world_parses_an_observation_once_and_never_remembers_a_fallback() -> None:
    world = RayServiceWorld(cast(RayServiceCalls, None))
    rayservice = rayservice_at(manifest(), 1, statuses())
    read = {"metadata": {"name": "svc-a", "uid": "u1"}, "spec": manifest()["spec"]["rayClusterConfig"]}
    world.clusters["svc-a"] = read
    first = world.cluster("svc-a", rayservice)
    assert first is not None
    assert world.cluster("svc-a", rayservice) is first  # the same observation: the same model
    world.clusters["svc-a"] = {**read, "status": {"state": "ready"}}
    newer = world.cluster("svc-a", rayservice)
    assert newer is not first
    assert newer is not None
    assert newer.status.state == "ready"
    unknown = copy.deepcopy(read)
    unknown["spec"]["headGroupSpec"]["template"] = "not a pod template"
    world.clusters["svc-a"] = unknown
    fallback = world.cluster("svc-a", rayservice)
    assert fallback is not None
    assert world.cluster("svc-a", rayservice) is not fallback
    world.forget(["svc-a"])
    assert world.cluster("svc-a", rayservice) is None


def test_manifest_errors() -> None:
    gates = FeatureGates()
    assert manifest_error(manifest(), gates) is None
    assert manifest_error({"kind": "RayService"}, gates)
    assert manifest_update_error(manifest(), manifest(version="v2"), gates) is None
    renamed = manifest_update_error(manifest(), manifest(name="other"), gates)
    assert renamed is not None
    assert "metadata.name is immutable" in renamed


def test_serve_update_event() -> None:
    ok = serve_update_event("ns", "svc-a", None)
    assert (ok.type, ok.reason) == ("Normal", "UpdatedServeApplications")
    assert ok.message == "Updated serve applications to the RayCluster ns/svc-a"
    failed = serve_update_event("ns", "svc-a", "HTTP 400")
    assert (failed.type, failed.reason) == ("Warning", "FailedToUpdateServeApplications")
    assert failed.message.endswith(": HTTP 400")


def test_current_details_names_phase_clusters_apps_and_endpoints() -> None:
    status = RayServiceStatuses.model_validate(
        {
            "activeServiceStatus": {
                "rayClusterName": "svc-a",
                "applicationStatuses": {"x": {"status": "RUNNING"}, "y": {"status": "DEPLOYING"}},
            },
            "pendingServiceStatus": {"rayClusterName": "svc-b"},
            "numServeEndpoints": 2,
        }
    )
    assert current_details(status, "Running", "traffic 20%") == (
        "Running; active svc-a (1/2 apps RUNNING); pending svc-b; 2 serve endpoints; traffic 20%"
    )
    assert current_details(statuses(), "Initializing") == "Initializing; 0 serve endpoints"


@pytest.mark.parametrize(
    ("active", "pending", "expected"),
    [(None, None, (100, 0)), (40, None, (40, 0)), (None, 60, (100, 60)), (30, 70, (30, 70))],
)
def test_default_target_capacities(
    active: int | None, pending: int | None, expected: tuple[int, int]
) -> None:
    status = RayServiceStatuses.model_validate(
        {
            "activeServiceStatus": {"targetCapacity": active},
            "pendingServiceStatus": {"targetCapacity": pending},
        }
    )
    result = default_target_capacities(status)
    assert (
        result.active_service_status.target_capacity,
        result.pending_service_status.target_capacity,
    ) == expected


def rollback(pending: str, in_progress: bool) -> RayServiceStatuses:
    condition = {"type": RayServiceConditionType.ROLLBACK_IN_PROGRESS.value, "status": str(in_progress)}
    return statuses("svc-a", pending, conditions=[condition])


@pytest.mark.parametrize(
    ("status", "incremental", "expected"),
    [
        (rollback("svc-b", True), False, True),
        (rollback("svc-b", True), True, False),
        (rollback("", True), False, False),
        (rollback("svc-b", False), False, False),
    ],
    ids=["blue-green abort", "incremental rolls back", "no pending cluster", "no rollback"],
)
def test_should_finish_aborted_upgrade(status: RayServiceStatuses, incremental: bool, expected: bool) -> None:
    assert should_finish_aborted_upgrade(status, incremental) is expected


@pytest.mark.parametrize(
    ("strategy", "gate", "expected"),
    [
        ("NewClusterWithIncrementalUpgrade", False, RayServiceUpgradeType.NEW_CLUSTER),
        (
            "NewClusterWithIncrementalUpgrade",
            True,
            RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE,
        ),
        ("NewCluster", False, RayServiceUpgradeType.NEW_CLUSTER),
        ("None", False, RayServiceUpgradeType.NONE),
        (None, False, None),
    ],
)
def test_incremental_strategy_falls_back_to_new_cluster_with_the_gate_off(
    strategy: str | None, gate: bool, expected: RayServiceUpgradeType | None
) -> None:
    spec: dict[str, Any] = {} if strategy is None else {"upgradeStrategy": {"type": strategy}}
    rayservice = rayservice_at(manifest(**spec), 1, statuses())
    gated = with_gated_upgrade_strategy(rayservice, FeatureGates(ray_service_incremental_upgrade=gate))
    found = gated.spec.upgrade_strategy.type if gated.spec.upgrade_strategy is not None else None
    assert found == expected
