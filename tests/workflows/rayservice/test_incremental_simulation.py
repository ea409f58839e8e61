"""A whole incremental upgrade and rollback played through the decisions: the sequence KubeRay's e2e helper
generateUpgradeSteps expects, exact intervalSeconds between traffic steps, and rollbacks that converge."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from models.meta import Condition, ConditionStatus, find_condition
from models.rayservice import ClusterUpgradeOptions, RayServiceStatuses
from tests.workflows.rayservice.incremental_simulation import (
    UpgradeEvent,
    expected_upgrade_steps,
    simulate_upgrade,
    upgrade_start_status,
)

START = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def options(surge: int, step: int, interval: int) -> ClusterUpgradeOptions:
    return ClusterUpgradeOptions(
        max_surge_percent=surge, step_size_percent=step, interval_seconds=interval, gateway_class_name="istio"
    )


def kinds_and_values(events: list[UpgradeEvent]) -> list[tuple[str, int]]:
    return [(event.kind, event.value) for event in events]


SURGE_50_STEP_25 = [
    ("pending_capacity", 50),
    ("traffic", 25),
    ("traffic", 50),
    ("active_capacity", 50),
    ("pending_capacity", 100),
    ("traffic", 75),
    ("traffic", 100),
    ("active_capacity", 0),
    ("promote", 100),
]


def test_surge_50_step_25_follows_kuberays_sequence() -> None:
    assert kinds_and_values(expected_upgrade_steps(50, 25)) == SURGE_50_STEP_25
    events, final = simulate_upgrade(upgrade_start_status("a", "b", START), options(50, 25, 10), START)
    assert kinds_and_values(events) == SURGE_50_STEP_25
    assert final.active_service_status.target_capacity == 0
    assert final.pending_service_status.traffic_routed_percent == 100


@pytest.mark.parametrize(
    ("surge", "step", "interval"),
    [(100, 100, 1), (50, 25, 5), (25, 5, 10), (30, 10, 3), (20, 20, 7), (40, 15, 2)],  # e2e combos and more
)
def test_simulation_matches_the_expected_sequence_and_interval(surge: int, step: int, interval: int) -> None:
    events, _ = simulate_upgrade(upgrade_start_status("a", "b", START), options(surge, step, interval), START)
    assert kinds_and_values(events) == kinds_and_values(expected_upgrade_steps(surge, step))
    traffic_times = [event.at for event in events if event.kind == "traffic"]
    assert traffic_times[0] == START + timedelta(
        seconds=interval
    )  # the route listed the pending backend at START
    gaps = {later - earlier for earlier, later in itertools.pairwise(traffic_times) if later and earlier}
    assert gaps <= {
        timedelta(seconds=interval)
    }  # each traffic step exactly intervalSeconds after the previous
    capacities = [(e.kind, e.value) for e in events if e.kind.endswith("capacity")]
    pending = [value for kind, value in capacities if kind == "pending_capacity"]
    active = [value for kind, value in capacities if kind == "active_capacity"]
    assert pending == sorted(pending)
    assert active == sorted(active, reverse=True)


def test_promote_skips_intervals_and_steps_but_keeps_the_order() -> None:
    events, _ = simulate_upgrade(
        upgrade_start_status("a", "b", START), options(25, 5, 60), START, promote=True
    )
    assert kinds_and_values(events) == [
        ("pending_capacity", 100),
        ("traffic", 100),
        ("active_capacity", 0),
        ("promote", 100),
    ]
    assert {event.at for event in events} == {START}


def rolling_back_from_half_way() -> tuple[ClusterUpgradeOptions, RayServiceStatuses]:
    status = upgrade_start_status("a", "b", START)
    status.active_service_status.target_capacity = 50
    status.active_service_status.traffic_routed_percent = 50
    status.pending_service_status.target_capacity = 100
    status.pending_service_status.traffic_routed_percent = 50
    status.conditions.append(
        Condition(type="RollbackInProgress", status=ConditionStatus.TRUE, reason="DesiredClusterSpecChanged")
    )
    return options(50, 25, 2), status


def test_rollback_from_half_way_converges_to_the_active_cluster() -> None:
    rollback_options, status = rolling_back_from_half_way()
    events, final = simulate_upgrade(status, rollback_options, START)
    assert kinds_and_values(events) == [
        ("pending_capacity", 50),
        ("active_capacity", 100),
        ("traffic", 25),
        ("traffic", 0),
        ("pending_capacity", 0),
        ("rollback_complete", 0),
    ]
    assert final.pending_service_status.ray_cluster_name == ""
    assert find_condition(final.conditions, "RollbackInProgress") is None
    assert (
        final.active_service_status.target_capacity,
        final.active_service_status.traffic_routed_percent,
    ) == (
        100,
        100,
    )


def test_expected_upgrade_steps_needs_positive_steps() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        expected_upgrade_steps(0, 10)
