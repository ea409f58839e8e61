"""Replica ranks in the status: read once per settled replica set, shown only while that set is current."""

from __future__ import annotations

from typing import Any

import pytest

from wire.dashboard import ReplicaRanks
from workflows.decisions.rayservice.replica_ranks import (
    rank_read_watches,
    rank_submission_id,
    settled_replicas_key,
    with_replica_ranks,
)
from workflows.decisions.rayservice.serve_status import parse_serve_details
from workflows.decisions.rayservice.watches import Watch


def replica(replica_id: str, state: str = "RUNNING", **extra: Any) -> dict[str, Any]:
    return {"replica_id": replica_id, "state": state, **extra}


def details(
    *replicas: dict[str, Any],
    target: int | None = None,
    deployment_status: str = "HEALTHY",
    app_status: str = "RUNNING",
    num_replicas: int | None = 4,
) -> dict[str, Any]:
    return {
        "applications": {
            "app": {
                "status": app_status,
                "deployments": {
                    "Model": {
                        "status": deployment_status,
                        "target_num_replicas": len(replicas) if target is None else target,
                        "num_replicas": num_replicas,
                        "replicas": list(replicas),
                    }
                },
            }
        },
        "target_capacity": 50,
    }


def key_of(body: dict[str, Any]) -> str:
    return settled_replicas_key(parse_serve_details(body))


TWO = (replica("a"), replica("b"))


@pytest.mark.parametrize(
    ("body", "settled"),
    [
        (details(*TWO), True),
        (details(*TWO, target=3), False),
        (details(replica("a"), replica("b", "STARTING")), False),
        (details(replica("a"), replica("b", "STOPPING"), target=1), False),
        (details(*TWO, deployment_status="UPSCALING"), False),
        (details(*TWO, app_status="DEPLOYING"), False),
        (details(), False),
        ({"applications": {}}, False),
        (details(replica("a", rank=0), replica("b", rank=1)), False),
    ],
    ids=[
        "settled",
        "below target",
        "a replica starting",
        "a replica stopping",
        "deployment upscaling",
        "application deploying",
        "no replicas",
        "no applications",
        "dashboard reports ranks",
    ],
)
def test_only_a_settled_replica_set_without_reported_ranks_is_read(
    body: dict[str, Any], settled: bool
) -> None:
    assert bool(key_of(body)) is settled


def test_the_key_follows_the_replica_set_not_its_order() -> None:
    assert key_of(details(replica("a"), replica("b"))) == key_of(details(replica("b"), replica("a")))
    assert key_of(details(replica("a"), replica("b"))) != key_of(details(replica("a"), replica("c")))


def test_submission_ids_are_deterministic_per_cluster_set_and_read() -> None:
    key = key_of(details(*TWO))
    first = rank_submission_id("svc-a", key, "run/1")
    assert first == rank_submission_id("svc-a", key, "run/1")
    assert first != rank_submission_id("svc-b", key, "run/1")
    assert first != rank_submission_id("svc-a", key, "run/2")
    assert first.startswith("raypilot-replica-ranks-")


def test_a_read_is_wanted_once_per_settled_set() -> None:
    settled = details(*TWO)
    key = key_of(settled)
    moving = details(replica("a"), replica("b", "STARTING"))
    assert rank_read_watches({"svc-a": settled, "svc-b": moving, "svc-c": None}, {}) == [
        Watch("ranks", "svc-a", key)
    ]
    assert rank_read_watches({"svc-a": settled}, {"svc-a": key}) == []
    assert rank_read_watches({"svc-a": settled}, {"svc-a": "an older set"}) == [Watch("ranks", "svc-a", key)]


READ = ReplicaRanks({"app": {"Model": {"a": [1, 0, 1], "b": [0, 0, 0], "gone": [2, 0, 2]}}})


def test_ranks_and_world_size_join_the_replicas_of_the_set_they_were_read_for() -> None:
    settled = details(*TWO)
    joined = with_replica_ranks(settled, (key_of(settled), READ))
    replicas = joined["applications"]["app"]["deployments"]["Model"]["replicas"]
    assert replicas == [
        replica("a", rank={"rank": 1, "node_rank": 0, "local_rank": 1}, world_size=4),
        replica("b", rank={"rank": 0, "node_rank": 0, "local_rank": 0}, world_size=4),
    ]
    assert settled["applications"]["app"]["deployments"]["Model"]["replicas"] == list(TWO)  # not mutated
    summary = parse_serve_details(joined).applications[0].deployments[0].replicas
    assert [(r.replica_id, r.rank, r.world_size) for r in summary] == [("a", 1, 4), ("b", 0, 4)]


@pytest.mark.parametrize(
    "read",
    [
        None,
        ("another set", READ),
        ("", READ),
    ],
    ids=["never read", "read for another set", "no key"],
)
def test_ranks_are_not_shown_for_another_replica_set(read: tuple[str, ReplicaRanks] | None) -> None:
    settled = details(*TWO)
    assert with_replica_ranks(settled, read) == settled


def test_a_failed_read_shows_no_ranks_and_a_moving_set_hides_them() -> None:
    settled = details(*TWO)
    assert with_replica_ranks(settled, (key_of(settled), ReplicaRanks({}, "job FAILED"))) == settled
    scaling = details(replica("a"), replica("b"), replica("c", "STARTING"), target=3)
    assert with_replica_ranks(scaling, (key_of(settled), READ)) == scaling


def test_world_size_is_left_out_when_the_dashboard_does_not_report_num_replicas() -> None:
    settled = details(*TWO, num_replicas=None)
    joined = with_replica_ranks(settled, (key_of(settled), READ))
    first = joined["applications"]["app"]["deployments"]["Model"]["replicas"][0]
    assert "world_size" not in first
    assert first["rank"]["rank"] == 1
