from __future__ import annotations

import base64
import copy
import string
from collections.abc import Callable
from typing import Any

import pytest

from models.hashing import (
    cluster_hash_annotations,
    cluster_spec_hash,
    is_cluster_spec_hash_equal,
    json_hash,
)
from models.raycluster import RayClusterSpec
from tests.models.kuberay_documents import kuberay_test_cluster

BASE32_HEX = set(string.digits + "ABCDEFGHIJKLMNOPQRSTUV")


def base_spec_json() -> dict[str, Any]:
    """KubeRay's test base: one worker group with one replica."""
    return kuberay_test_cluster(
        "2.9.0", "rayproject/ray:2.9.0", head_start_params={"dashboard-host": "0.0.0.0"}
    )


def spec(mutate: Callable[[dict[str, Any]], None] | None = None) -> RayClusterSpec:
    data = base_spec_json()
    if mutate is not None:
        mutate(data)
    return RayClusterSpec.model_validate(data)


def set_worker(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        data["workerGroupSpecs"][0][key] = value

    return mutate


def set_ray_version(data: dict[str, Any]) -> None:
    data["rayVersion"] = "2.10.0"


def add_tolerations(data: dict[str, Any]) -> None:
    toleration = {"key": "dedicated", "operator": "Equal", "value": "ray", "effect": "NoSchedule"}
    data["headGroupSpec"]["template"]["spec"]["tolerations"] = [toleration]
    data["workerGroupSpecs"][0]["template"]["spec"]["tolerations"] = [toleration]


def add_scheduling_gates(data: dict[str, Any]) -> None:
    gate = [{"name": "kueue.x-k8s.io/admission"}]
    data["headGroupSpec"]["template"]["spec"]["schedulingGates"] = gate
    data["workerGroupSpecs"][0]["template"]["spec"]["schedulingGates"] = gate


def append_group(data: dict[str, Any]) -> None:
    group = copy.deepcopy(data["workerGroupSpecs"][0])
    group["groupName"] = "extra-group"
    data["workerGroupSpecs"].append(group)


def change_image(data: dict[str, Any]) -> None:
    data["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.10.0"


def explicit_defaults(data: dict[str, Any]) -> None:
    data["workerGroupSpecs"][0]["numOfHosts"] = 1
    data["workerGroupSpecs"][0]["rayStartParams"] = {}
    data["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = []


def set_upgrade_strategy(data: dict[str, Any]) -> None:
    data["upgradeStrategy"] = {"type": "Recreate"}


def set_suspend(data: dict[str, Any]) -> None:
    data["suspend"] = True


def set_workers_to_delete(data: dict[str, Any]) -> None:
    data["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": ["pod-a", "pod-b"]}


def remove_group(data: dict[str, Any]) -> None:
    data["workerGroupSpecs"] = []


def chain(*mutations: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(data)

    return mutate


def test_hash_is_sha1_in_base32_hex() -> None:
    digest = cluster_spec_hash(spec())
    assert len(digest) == 32  # 160 bits / 5, no padding
    assert set(digest) <= BASE32_HEX
    sha1_of_empty_object = "bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f"  # sha1 of the two bytes "{}"
    assert json_hash({}) == base64.b32hexencode(bytes.fromhex(sha1_of_empty_object)).decode()


@pytest.mark.parametrize(
    ("mutation", "same_hash"),
    [
        # KubeRay's GenerateHash table
        (set_worker("replicas", 2), True),
        (set_ray_version, False),
        (add_tolerations, True),
        (add_scheduling_gates, True),
        # and the other fields it mutes
        (set_worker("minReplicas", 1), True),
        (set_worker("maxReplicas", 100), True),
        (set_workers_to_delete, True),
        (set_upgrade_strategy, True),
        (set_suspend, True),
        (explicit_defaults, True),
        # and changes that need a new cluster
        (change_image, False),
        (set_worker("groupName", "renamed"), False),
        (set_worker("rayStartParams", {"num-cpus": "1"}), False),
        (append_group, False),
    ],
)
def test_cluster_spec_hash_ignores_exactly_the_scaling_fields(
    mutation: Callable[[dict[str, Any]], None], same_hash: bool
) -> None:
    assert (cluster_spec_hash(spec(mutation)) == cluster_spec_hash(spec())) is same_hash


def test_hash_does_not_depend_on_key_order() -> None:
    data = base_spec_json()
    reordered = dict(reversed(list(data.items())))
    assert cluster_spec_hash(RayClusterSpec.model_validate(reordered)) == cluster_spec_hash(spec())


@pytest.mark.parametrize(
    ("goal_mutation", "partial", "expected"),
    [
        # KubeRay's isClusterSpecHashEqual table (cluster = base spec, 1 group)
        (set_worker("replicas", 3), False, True),
        (None, False, True),
        (set_ray_version, False, False),
        (append_group, True, True),
        (chain(set_worker("replicas", 3), append_group), True, True),
        (set_worker("replicas", 3), True, True),
        (set_ray_version, True, False),
        # an appended group is not a full match
        (append_group, False, False),
        # removing a group never matches
        (remove_group, True, False),
        (remove_group, False, False),
    ],
)
def test_is_cluster_spec_hash_equal(
    goal_mutation: Callable[[dict[str, Any]], None] | None, partial: bool, expected: bool
) -> None:
    annotations = cluster_hash_annotations(spec())
    assert is_cluster_spec_hash_equal(spec(goal_mutation), annotations, partial) is expected


@pytest.mark.parametrize("count", ["", "one", "1.0", " 1"])
def test_partial_with_unparsable_group_count_is_equal(count: str) -> None:
    annotations = {**cluster_hash_annotations(spec()), "ray.io/num-worker-groups": count}
    assert is_cluster_spec_hash_equal(spec(set_ray_version), annotations, partial=True)


def test_partial_with_fewer_goal_groups_compares_with_empty_hash() -> None:
    without_hash = {"ray.io/num-worker-groups": "1"}
    assert is_cluster_spec_hash_equal(spec(remove_group), without_hash, partial=True)
    assert not is_cluster_spec_hash_equal(spec(remove_group), cluster_hash_annotations(spec()), partial=True)


def test_full_comparison_without_hash_annotation_is_not_equal() -> None:
    assert not is_cluster_spec_hash_equal(spec(), {}, partial=False)


def test_partial_match_after_two_appended_groups() -> None:
    two_groups = spec(append_group)
    annotations = cluster_hash_annotations(two_groups)
    assert annotations["ray.io/num-worker-groups"] == "2"

    def third_group(data: dict[str, Any]) -> None:
        append_group(data)
        extra = copy.deepcopy(data["workerGroupSpecs"][0])
        extra["groupName"] = "third-group"
        data["workerGroupSpecs"].append(extra)

    assert is_cluster_spec_hash_equal(spec(third_group), annotations, partial=True)
    assert not is_cluster_spec_hash_equal(spec(third_group), annotations, partial=False)


def test_cluster_hash_annotations() -> None:
    annotations = cluster_hash_annotations(spec(append_group))
    assert annotations == {
        "ray.io/hash-without-replicas-and-workers-to-delete": cluster_spec_hash(spec(append_group)),
        "ray.io/num-worker-groups": "2",
        "ray.io/kuberay-version": "nightly",
    }
