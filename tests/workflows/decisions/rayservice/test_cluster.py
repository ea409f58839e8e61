"""RayService cluster decisions: KubeRay's tables for isZeroDowntimeUpgradeEnabled, isClusterSpecHashEqual,
shouldPrepareNewCluster, reconcileRayCluster (shouldUpdateCluster), constructRayClusterForRayService."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from models.features import FeatureGates
from models.hashing import cluster_hash_annotations, is_cluster_spec_hash_equal
from models.meta import Condition, ConditionStatus
from models.naming import ANNOTATION_HASH, ANNOTATION_KUBERAY_VERSION, ANNOTATION_NUM_WORKER_GROUPS
from models.operator import OperatorConfig
from models.raycluster import RayCluster
from models.rayservice import RayService, RayServiceUpgradeStrategy
from tests.models.kuberay_documents import kuberay_test_cluster
from workflows.decisions.rayservice.cluster import (
    ServiceClusters,
    in_place_cluster_update,
    is_incremental_upgrade_enabled,
    is_zero_downtime_upgrade_enabled,
    rayservice_cluster_manifest,
    should_prepare_new_cluster,
    should_update_cluster,
)

DEFAULT = OperatorConfig()
GATE_OFF = OperatorConfig(feature_gates=FeatureGates(ray_service_incremental_upgrade=False))


def spec_json() -> dict[str, Any]:
    return kuberay_test_cluster("2.9.0", "rayproject/ray:2.9.0")


Mutation = Callable[[dict[str, Any]], None]


def rayservice(mutate: Mutation | None = None, strategy: str | None = None, **status: Any) -> RayService:
    cluster_spec = spec_json()
    if mutate is not None:
        mutate(cluster_spec)
    spec: dict[str, Any] = {"rayClusterConfig": cluster_spec}
    if strategy is not None:
        spec["upgradeStrategy"] = {"type": strategy}
    return RayService.model_validate(
        {
            "metadata": {"name": "svc", "namespace": "ns", "labels": {"team": "a"}},
            "spec": spec,
            "status": status,
        }
    )


def cluster(name: str = "svc-old", mutate: Mutation | None = None, **annotations: str) -> RayCluster:
    """A RayCluster as raypilot created it from `spec_json()` (optionally mutated), annotations
    overridable."""
    cluster_spec = spec_json()
    if mutate is not None:
        mutate(cluster_spec)
    built = RayCluster.model_validate({"metadata": {"name": name}, "spec": cluster_spec})
    built.metadata.annotations = {**cluster_hash_annotations(built.spec), **annotations}
    return built


def new_ray_version(data: dict[str, Any]) -> None:
    data["rayVersion"] = "2.100.0"


def more_replicas(data: dict[str, Any]) -> None:
    data["workerGroupSpecs"][0]["replicas"] = 3


def appended_group(data: dict[str, Any]) -> None:
    group = copy.deepcopy(data["workerGroupSpecs"][0])
    group["groupName"] = "added"
    data["workerGroupSpecs"].append(group)


def both(*mutations: Mutation) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(data)

    return mutate


UPGRADING = [
    Condition(type="UpgradeInProgress", status=ConditionStatus.TRUE, reason="BothActivePendingClustersExist")
]
ROLLING_BACK = [
    Condition(type="RollbackInProgress", status=ConditionStatus.TRUE, reason="DesiredClusterSpecChanged")
]


@pytest.mark.parametrize(
    ("strategy", "env_zero_downtime", "expected"),
    [
        (None, True, True),  # (nil, "") and (nil, "true")
        (None, False, False),  # (nil, "false")
        ("NewCluster", True, True),
        ("NewCluster", False, True),  # the spec wins over the env
        ("None", True, False),
        ("None", False, False),
        ("NewClusterWithIncrementalUpgrade", True, True),
    ],
)
def test_is_zero_downtime_upgrade_enabled(
    strategy: str | None, env_zero_downtime: bool, expected: bool
) -> None:
    upgrade = RayServiceUpgradeStrategy(type=strategy) if strategy is not None else None
    config = OperatorConfig(enable_zero_downtime=env_zero_downtime)
    assert is_zero_downtime_upgrade_enabled(upgrade, config) is expected


def test_incremental_type_counts_as_no_upgrade_when_the_gate_is_off() -> None:
    upgrade = RayServiceUpgradeStrategy(type="NewClusterWithIncrementalUpgrade")
    assert is_zero_downtime_upgrade_enabled(upgrade, GATE_OFF) is False
    assert is_zero_downtime_upgrade_enabled(RayServiceUpgradeStrategy(type="NewCluster"), GATE_OFF) is True


@pytest.mark.parametrize(
    ("strategy", "config", "expected"),
    [
        (None, DEFAULT, False),  # no type
        ("NewClusterWithIncrementalUpgrade", GATE_OFF, False),  # type set, gate off
        ("NewClusterWithIncrementalUpgrade", DEFAULT, True),  # type set, gate on
        ("NewCluster", DEFAULT, False),
    ],
)
def test_is_incremental_upgrade_enabled(strategy: str | None, config: OperatorConfig, expected: bool) -> None:
    assert is_incremental_upgrade_enabled(rayservice(strategy=strategy).spec, config) is expected


@pytest.mark.parametrize(
    ("goal_mutation", "partial", "expected"),
    [
        (more_replicas, False, True),  # full / different replicas
        (None, False, True),  # full / identical
        (new_ray_version, False, False),  # full / rayVersion changed
        (appended_group, True, True),  # partial / new group appended
        (both(more_replicas, appended_group), True, True),  # partial / different replicas + new group
        (more_replicas, True, True),  # partial / different replicas
        (new_ray_version, True, False),  # partial / rayVersion changed
    ],
)
def test_is_cluster_spec_hash_equal(goal_mutation: Mutation | None, partial: bool, expected: bool) -> None:
    goal = rayservice(goal_mutation).spec.ray_cluster_config
    assert is_cluster_spec_hash_equal(goal, cluster().metadata.annotations, partial) is expected


def test_suspend_is_not_part_of_the_goal_hash() -> None:
    def suspended(data: dict[str, Any]) -> None:
        data["suspend"] = True

    unchanged_but_suspended = ServiceClusters(rayservice(suspended), cluster(), None, False, DEFAULT)
    assert should_prepare_new_cluster(unchanged_but_suspended) is False


@pytest.mark.parametrize(
    ("goal_mutation", "active", "pending", "serving", "conditions", "expected"),
    [
        (None, None, None, False, [], True),  # nothing exists yet
        (new_ray_version, "old", None, False, [], True),  # active has the old hash, spec changed
        (
            new_ray_version,
            "old",
            "old",
            False,
            UPGRADING,
            True,
        ),  # pending (old hash) replaced by a newer spec
        (new_ray_version, "old", "old", True, UPGRADING, False),  # pending just started serving
        (None, "old", None, False, [], False),  # spec unchanged
        (appended_group, "old", None, False, [], False),  # appended groups: in-place update instead
        (new_ray_version, "old", "old", False, UPGRADING + ROLLING_BACK, False),  # never during a rollback
        (new_ray_version, "old", "new", False, UPGRADING, False),  # pending already runs the goal
    ],
)
def test_should_prepare_new_cluster(
    goal_mutation: Mutation | None,
    active: str | None,
    pending: str | None,
    serving: bool,
    conditions: list[Condition],
    expected: bool,
) -> None:
    clusters = {"old": cluster(), "new": cluster("svc-new", new_ray_version)}
    rs = rayservice(goal_mutation, conditions=[c.model_dump() for c in conditions])
    active_cluster = clusters[active] if active else None
    pending_cluster = clusters[pending] if pending else None
    assert (
        should_prepare_new_cluster(ServiceClusters(rs, active_cluster, pending_cluster, serving, DEFAULT))
        is expected
    )


@pytest.mark.parametrize(
    ("strategy", "env_zero_downtime", "expected"),
    [("None", True, False), (None, False, False), ("NewCluster", True, True)],
)
def test_should_prepare_new_cluster_follows_the_upgrade_strategy(
    strategy: str | None, env_zero_downtime: bool, expected: bool
) -> None:
    rs = rayservice(new_ray_version, strategy=strategy)
    config = OperatorConfig(enable_zero_downtime=env_zero_downtime)
    assert should_prepare_new_cluster(ServiceClusters(rs, cluster(), None, False, config)) is expected


def test_an_aborted_goal_does_not_start_a_new_cluster_again() -> None:
    from workflows.decisions.rayservice.cluster import goal_cluster_hash

    rs = rayservice(new_ray_version)
    aborted = goal_cluster_hash(rs.spec)
    aborted_goal = ServiceClusters(rs, cluster(), None, False, DEFAULT, suppressed_goal_hash=aborted)
    assert should_prepare_new_cluster(aborted_goal) is False
    other_goal = ServiceClusters(rs, cluster(), None, False, DEFAULT, suppressed_goal_hash="other")
    assert should_prepare_new_cluster(other_goal) is True


@pytest.mark.parametrize(
    ("goal_mutation", "annotations", "is_active", "conditions", "expected"),
    [
        (None, {}, True, [], False),  # nothing changed
        (
            None,
            {ANNOTATION_KUBERAY_VERSION: "v1.0.0"},
            True,
            [],
            True,
        ),  # other KubeRay version: update in place
        (new_ray_version, {ANNOTATION_KUBERAY_VERSION: "v1.0.0"}, True, [], True),  # even if the spec changed
        (appended_group, {}, True, [], True),  # worker group appended: update in place
        (appended_group, {}, False, [], True),  # also the pending cluster
        (appended_group, {}, True, UPGRADING, False),  # active cluster is frozen while upgrading
        (appended_group, {}, False, UPGRADING, True),  # the pending one is not
        (new_ray_version, {}, True, [], False),  # any other change: not in place
        (None, {ANNOTATION_KUBERAY_VERSION: "v1.0.0"}, False, [], False),  # version only matters for active
        (
            more_replicas,
            {ANNOTATION_NUM_WORKER_GROUPS: "x"},
            True,
            [],
            True,
        ),  # unreadable count: True (KubeRay)
    ],
)
def test_should_update_cluster(
    goal_mutation: Mutation | None,
    annotations: dict[str, str],
    is_active: bool,
    conditions: list[Condition],
    expected: bool,
) -> None:
    rs = rayservice(goal_mutation, conditions=[c.model_dump() for c in conditions])
    existing = cluster(**annotations)
    if ANNOTATION_NUM_WORKER_GROUPS in annotations:
        existing.metadata.annotations[ANNOTATION_HASH] = "stale"
    assert should_update_cluster(rs, existing, is_active) is expected


def test_should_update_cluster_without_a_cluster() -> None:
    assert should_update_cluster(rayservice(), None, True) is False


def test_rayservice_cluster_manifest_labels_annotations_and_hash() -> None:
    rs = rayservice()
    rs.metadata.annotations = {"ray.io/initializing-timeout": "5m"}
    manifest = rayservice_cluster_manifest(rs, "svc-abcde", DEFAULT)
    metadata = manifest["metadata"]
    assert (manifest["apiVersion"], manifest["kind"]) == ("ray.io/v1", "RayCluster")
    assert (metadata["name"], metadata["namespace"]) == ("svc-abcde", "ns")
    assert metadata["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "svc",
        "ray.io/originated-from-crd": "RayService",
        "app.kubernetes.io/created-by": "raypilot",
    }
    annotations = metadata["annotations"]
    assert annotations["ray.io/initializing-timeout"] == "5m"
    assert annotations["ray.io/num-worker-groups"] == "1"
    assert annotations["ray.io/kuberay-version"] == "nightly"
    assert annotations["raypilot.io/workflow-id"] == "rayservice/ns/svc"
    assert is_cluster_spec_hash_equal(rs.spec.ray_cluster_config, annotations, partial=False)
    assert manifest["spec"]["workerGroupSpecs"][0]["replicas"] == 1
    assert "ownerReferences" not in metadata


@pytest.mark.parametrize(
    ("strategy", "active_name", "replicas_kept"),
    [
        ("NewClusterWithIncrementalUpgrade", "svc-active", False),  # pending cluster of an upgrade
        ("NewClusterWithIncrementalUpgrade", "", True),  # first deployment
        ("NewCluster", "svc-active", True),
    ],
)
def test_incremental_pending_cluster_leaves_replicas_unset(
    strategy: str, active_name: str, replicas_kept: bool
) -> None:
    rs = rayservice(strategy=strategy, activeServiceStatus={"rayClusterName": active_name})
    group = rayservice_cluster_manifest(rs, "svc-new", DEFAULT)["spec"]["workerGroupSpecs"][0]
    assert ("replicas" in group) is replicas_kept
    assert group["minReplicas"] == 0
    assert group["maxReplicas"] == 5


def test_in_place_cluster_update_keeps_suspend_and_metadata() -> None:
    current = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "svc-a", "namespace": "ns", "resourceVersion": "7", "labels": {"old": "x"}},
        "spec": {"suspend": True, "rayVersion": "2.9.0"},
        "status": {"state": "ready"},
    }
    goal = {
        "metadata": {"name": "svc-a", "namespace": "ns", "labels": {"new": "y"}, "annotations": {"a": "b"}},
        "spec": {"rayVersion": "2.10.0", "suspend": False},
    }
    updated = in_place_cluster_update(current, goal)
    assert updated["spec"] == {"rayVersion": "2.10.0", "suspend": True}
    assert updated["metadata"] == {
        "name": "svc-a",
        "namespace": "ns",
        "resourceVersion": "7",
        "labels": {"new": "y"},
        "annotations": {"a": "b"},
    }
    assert current["spec"]["rayVersion"] == "2.9.0"  # the input is not modified


def test_in_place_cluster_update_refuses_another_cluster() -> None:
    with pytest.raises(ValueError, match="different names or namespaces"):
        in_place_cluster_update({"metadata": {"name": "a", "namespace": "ns"}}, {"metadata": {"name": "b"}})
