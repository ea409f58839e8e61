"""Serve config submission: KubeRay's checkIfNeedSubmitServeApplications table, reconcileServe's skip rules
during an incremental upgrade and rollback, the YAML -> JSON body, applyServeTargetCapacity and the cache."""

from __future__ import annotations

from typing import Any

import pytest

from models.meta import Condition, ConditionStatus
from models.rayservice import AppStatus, RayServiceStatuses
from workflows.decisions.rayservice.serve import (
    REASON_CONFIG_CHANGED,
    REASON_CONFIG_MATCHES,
    REASON_NO_APPLICATIONS,
    REASON_NOTHING_CACHED,
    ServeConfigError,
    cache_submitted_serve_config,
    expected_target_capacity,
    prune_serve_config_cache,
    serve_config_for_cluster,
    serve_config_json,
    serve_config_target_capacity,
    should_skip_serve_config_submission,
    should_submit_serve_config,
    target_capacity_config,
)

APPS = {"app": AppStatus(status="RUNNING")}


@pytest.mark.parametrize(
    ("cached", "spec", "apps", "expected"),
    [
        ("", "c1", {}, (True, REASON_NOTHING_CACHED)),
        ("c1", "c1", APPS, (False, REASON_CONFIG_MATCHES)),
        ("c1", "c2", APPS, (True, REASON_CONFIG_CHANGED)),
        ("c1", "c1", {}, (True, REASON_NO_APPLICATIONS)),  # head restarted without GCS FT
        ("", "c1", APPS, (True, REASON_NOTHING_CACHED)),
    ],
)
def test_should_submit_serve_config(
    cached: str, spec: str, apps: dict[str, AppStatus], expected: tuple[bool, str]
) -> None:
    assert should_submit_serve_config(cached, spec, apps) == expected


def conditions(*types: str) -> list[Condition]:
    return [Condition(type=t, status=ConditionStatus.TRUE, reason="X") for t in types]


def status_with(*types: str) -> RayServiceStatuses:
    return RayServiceStatuses(
        conditions=conditions(*types),
        active_service_status={"rayClusterName": "active", "targetCapacity": 40},
        pending_service_status={"rayClusterName": "pending", "targetCapacity": 60},
    )


@pytest.mark.parametrize(
    ("cluster", "conditions_true", "incremental", "skip"),
    [
        ("active", ["UpgradeInProgress", "RollbackInProgress"], True, False),  # rollback: active gets the PUT
        ("pending", ["UpgradeInProgress", "RollbackInProgress"], True, True),  # rollback: pending does not
        ("pending", ["UpgradeInProgress"], True, False),  # upgrade: pending gets the PUT
        ("active", ["UpgradeInProgress"], True, True),  # upgrade: active keeps its config
        ("active", [], True, False),
        ("active", ["UpgradeInProgress"], False, False),  # NewCluster: never skipped
    ],
)
def test_should_skip_serve_config_submission(
    cluster: str, conditions_true: list[str], incremental: bool, skip: bool
) -> None:
    assert should_skip_serve_config_submission(cluster, status_with(*conditions_true), incremental) is skip


@pytest.mark.parametrize(
    ("cluster", "incremental", "expected"),
    [("active", True, 40), ("pending", True, 60), ("other", True, None), ("pending", False, None)],
)
def test_serve_config_target_capacity(cluster: str, incremental: bool, expected: int | None) -> None:
    assert serve_config_target_capacity(cluster, status_with(), incremental) == expected


SERVE_YAML = """
applications:
  - name: fruit
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    runtime_env:
      working_dir: "https://example.invalid/x.zip"
    deployments:
      - name: MangoStand
        num_replicas: 2
        user_config:
          price: 3
          since: 2024-01-01
"""


def test_serve_config_json_converts_yaml_and_sets_target_capacity() -> None:
    body = serve_config_json(SERVE_YAML, target_capacity=30)
    assert body["target_capacity"] == 30
    deployment = body["applications"][0]["deployments"][0]
    assert deployment["num_replicas"] == 2
    assert deployment["user_config"] == {"price": 3, "since": "2024-01-01"}  # dates stay strings (JSON)
    assert "target_capacity" not in serve_config_json(SERVE_YAML, target_capacity=None)
    assert serve_config_json("", None) == {}


@pytest.mark.parametrize("text", ["- just\n- a list\n", "key: [unclosed"])
def test_serve_config_json_rejects_non_mappings(text: str) -> None:
    with pytest.raises(ServeConfigError):
        serve_config_json(text, None)


@pytest.mark.parametrize(
    ("cached", "spec", "goal", "expected"),
    [
        ("", '{"target_capacity": 0}', 30, {"target_capacity": 30}),  # KubeRay's test: the spec is used
        ("", '{"target_capacity": 0}', 60, {"target_capacity": 60}),
        ("target_capacity: 30\n", '{"target_capacity": 0}', 30, None),  # the cached config already says 30
        ("target_capacity: 30.0\n", "x: 1", 30, None),  # a float compares by its integer part
        ("applications: []\n", "x: 1", 0, {"applications": [], "target_capacity": 0}),
    ],
)
def test_target_capacity_config(cached: str, spec: str, goal: int, expected: dict[str, Any] | None) -> None:
    assert target_capacity_config(cached, spec, goal) == expected


def test_serve_config_cache_rules() -> None:
    cache = cache_submitted_serve_config({}, "svc-a", "config-1")
    cache = cache_submitted_serve_config(cache, "svc-b", "config-2")
    assert cache_submitted_serve_config(cache, "svc-c", "") == cache  # an empty config is not cached
    assert prune_serve_config_cache(cache, "svc-b", "") == {"svc-b": "config-2"}
    assert prune_serve_config_cache(cache, "svc-a", "svc-b") == cache
    assert cache == {"svc-a": "config-1", "svc-b": "config-2"}


@pytest.mark.parametrize(
    ("config", "injected", "expected"),
    [
        ("applications: []\n", None, None),
        ("target_capacity: 50\napplications: []\n", None, 50),
        ("target_capacity: 12.5\napplications: []\n", None, 12.5),
        ("target_capacity: 50\napplications: []\n", 30, 30),
        ("applications: [\n", None, None),
    ],
    ids=["none", "the user's (NewCluster passes it through)", "fractional", "injected wins", "unreadable"],
)
def test_expected_target_capacity(config: str, injected: int | None, expected: float | None) -> None:
    assert expected_target_capacity(config, injected) == expected


@pytest.mark.parametrize(
    ("cluster", "conditions", "incremental", "cache", "expected"),
    [
        # A third spec during an incremental rollback: the active cluster keeps what it was given ...
        ("a", ("UpgradeInProgress", "RollbackInProgress"), True, {"a": "A"}, "A"),
        # ... the pending one is not submitted to at all (should_skip), and would get the spec's.
        ("b", ("UpgradeInProgress", "RollbackInProgress"), True, {"a": "A", "b": "B"}, "C"),
        # Nothing cached for the active cluster: only the spec's is known.
        ("a", ("UpgradeInProgress", "RollbackInProgress"), True, {}, "C"),
        # No rollback, or not incremental: the spec's, as KubeRay.
        ("a", ("UpgradeInProgress",), True, {"a": "A"}, "C"),
        ("a", (), True, {"a": "A"}, "C"),
        ("a", ("UpgradeInProgress", "RollbackInProgress"), False, {"a": "A"}, "C"),
    ],
)
def test_serve_config_for_cluster(
    cluster: str, conditions: tuple[str, ...], incremental: bool, cache: dict[str, str], expected: str
) -> None:
    status = RayServiceStatuses.model_validate(
        {
            "conditions": [{"type": c, "status": "True", "reason": "X"} for c in conditions],
            "activeServiceStatus": {"rayClusterName": "a"},
            "pendingServiceStatus": {"rayClusterName": "b"},
        }
    )
    assert serve_config_for_cluster(cluster, status, incremental, cache, "C") == expected
