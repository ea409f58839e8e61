"""Sharded observers: which observer of a namespace watches a cluster (a stable hash of its head Service into
RAYPILOT_OBSERVER_SHARDS shards), the observer ids, and the setting."""

from __future__ import annotations

import pytest

from wire.observer import (
    DEFAULT_OBSERVER_SHARDS,
    observer_shard,
    observer_shards_from_env,
    observer_workflow_id,
)


@pytest.mark.parametrize(
    ("head_service", "shards", "shard"),
    [
        # crc32 of the name modulo the shards: the same on every worker, process and run.
        ("shared-cluster-head-svc", 4, 0),
        ("mnist-abcde-head-svc", 4, 3),
        ("team-a-1-head-svc", 4, 1),
        ("team-a-2-head-svc", 4, 2),
        ("team-a-3-head-svc", 16, 12),
        ("team-a-3-head-svc", 1, 0),  # one shard: the namespace's single observer
        ("anything", 0, 0),
    ],
)
def test_observer_shard_is_a_stable_hash_of_the_head_service(
    head_service: str, shards: int, shard: int
) -> None:
    assert observer_shard(head_service, shards) == shard


def test_clusters_spread_over_the_shards() -> None:
    counts = [0] * 4
    for index in range(400):
        counts[observer_shard(f"job-{index}-head-svc", 4)] += 1
    assert min(counts) >= 70  # 100 each if even; no shard left empty or holding most


@pytest.mark.parametrize(
    ("shard", "workflow_id"),
    [
        (0, "raypilot-observer/raypilot/team-a"),  # the id before sharding: its observers carry on
        (1, "raypilot-observer/raypilot/team-a/1"),
        (3, "raypilot-observer/raypilot/team-a/3"),
    ],
)
def test_observer_ids(shard: int, workflow_id: str) -> None:
    assert observer_workflow_id("raypilot", "team-a", shard) == workflow_id


@pytest.mark.parametrize(
    ("value", "shards"), [(None, DEFAULT_OBSERVER_SHARDS), ("", 4), (" 1 ", 1), ("16", 16), ("256", 256)]
)
def test_observer_shards_setting(value: str | None, shards: int) -> None:
    env = {} if value is None else {"RAYPILOT_OBSERVER_SHARDS": value}
    assert observer_shards_from_env(env) == shards


@pytest.mark.parametrize("value", ["0", "-2", "257", "four", "2.5"])
def test_a_wrong_observer_shards_setting_is_an_error(value: str) -> None:
    with pytest.raises(ValueError, match="RAYPILOT_OBSERVER_SHARDS"):
        observer_shards_from_env({"RAYPILOT_OBSERVER_SHARDS": value})
