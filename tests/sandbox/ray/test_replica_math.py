"""Table tests for the Serve replica math the simulated dashboard reproduces (reference A.3, A.4)."""

from __future__ import annotations

import pytest

from sandbox.ray.simulated_replicas import (
    AutoscalingBounds,
    Direction,
    ReplicaView,
    autoscaling_target_num_replicas,
    capacity_adjusted_num_replicas,
    replicas_to_stop,
    settled_ranks,
    smallest_free_rank,
    target_capacity_direction,
    world_size,
)


@pytest.mark.parametrize(
    ("num_replicas", "target_capacity", "expected"),
    [
        (4, None, 4),
        (4, 100, 4),
        (4, 50, 2),  # verified live on Ray 2.60
        (4, 0, 0),
        (0, 50, 0),
        (1, 1, 1),  # never rounds down to 0
        (5, 30, 2),  # 1.5 rounds half up
        (3, 50, 2),  # 1.5 rounds half up, not to even
        (5, 50, 3),  # 2.5 rounds half up, not to even
        (10, 30, 3),
        (7, 33.3, 2),
        (10, 25, 3),  # 2.5 -> 3
        (2, 75, 2),  # 1.5 -> 2
    ],
)
def test_capacity_adjusted_num_replicas(
    num_replicas: int, target_capacity: float | None, expected: int
) -> None:
    assert capacity_adjusted_num_replicas(num_replicas, target_capacity) == expected


APPS = frozenset({"app1"})
OTHER_APPS = frozenset({"app1", "app2"})


@pytest.mark.parametrize(
    ("previous_names", "previous_tc", "names", "tc", "previous_direction", "expected"),
    [
        (APPS, 50.0, APPS, 80.0, None, Direction.UP),
        (APPS, 80.0, APPS, 50.0, Direction.UP, Direction.DOWN),
        (APPS, None, APPS, 50.0, None, Direction.DOWN),
        (APPS, 50.0, APPS, None, Direction.UP, None),
        (APPS, 50.0, APPS, 50.0, Direction.UP, Direction.UP),  # unchanged keeps the previous direction
        (APPS, 50.0, APPS, 50.0, Direction.DOWN, Direction.DOWN),
        (APPS, 50.0, OTHER_APPS, 10.0, Direction.DOWN, Direction.UP),  # a different app set scales up
        (APPS, 50.0, OTHER_APPS, None, Direction.DOWN, None),
        (None, None, APPS, 30.0, None, Direction.UP),  # first config with a capacity
        (None, None, APPS, None, None, None),
    ],
)
def test_target_capacity_direction(
    previous_names: frozenset[str] | None,
    previous_tc: float | None,
    names: frozenset[str],
    tc: float | None,
    previous_direction: Direction | None,
    expected: Direction | None,
) -> None:
    assert target_capacity_direction(previous_names, previous_tc, names, tc, previous_direction) is expected


BOUNDS = AutoscalingBounds(min_replicas=3, max_replicas=10, initial_replicas=5)


@pytest.mark.parametrize(
    ("bounds", "current", "tc", "direction", "config_changed", "expected"),
    [
        # Verified live: {min 3, initial 5, max 10} at tc 30 on a fresh deploy -> 3 (lower 2, upper 3).
        (BOUNDS, 0, 30.0, Direction.UP, True, 3),
        # Then tc 100 on the same app -> 5 (lower bound is adj(initial) while scaling up).
        (BOUNDS, 3, 100.0, Direction.UP, False, 5),
        (BOUNDS, 3, None, None, False, 3),
        (BOUNDS, 8, 50.0, Direction.DOWN, False, 5),  # clipped to adj(max=10, 50) = 5
        (BOUNDS, 1, 50.0, Direction.DOWN, False, 2),  # lower is adj(min=3, 50) = 2 when scaling down
        (AutoscalingBounds(min_replicas=1, max_replicas=4), 0, None, None, True, 1),
        (AutoscalingBounds(min_replicas=0, max_replicas=4), 0, 0.0, Direction.DOWN, False, 0),
    ],
)
def test_autoscaling_target_num_replicas(
    bounds: AutoscalingBounds,
    current: int,
    tc: float | None,
    direction: Direction | None,
    config_changed: bool,
    expected: int,
) -> None:
    assert (
        autoscaling_target_num_replicas(bounds, current, tc, direction, config_changed=config_changed)
        == expected
    )


@pytest.mark.parametrize(
    ("num_replicas", "expected"),
    [(4, 4), (1, 1), (None, 1), ("auto", 1), (True, 1)],
)
def test_world_size_is_the_configured_count(num_replicas: object, expected: int) -> None:
    assert world_size(num_replicas) == expected


@pytest.mark.parametrize(
    ("taken", "expected"),
    [([], 0), ([0, 1, 2], 3), ([0, 2], 1), ([1, 2], 0), ([3, 0, 1], 2)],
)
def test_smallest_free_rank_reuses_released_ranks(taken: list[int], expected: int) -> None:
    assert smallest_free_rank(taken) == expected


@pytest.mark.parametrize(
    ("ranks", "expected"),
    [
        ({}, {}),
        ({"a": 0, "b": 1}, {"a": 0, "b": 1}),
        ({"a": 0, "b": 3}, {"a": 0, "b": 1}),  # only the out-of-range replica moves
        ({"a": 2, "b": 3}, {"a": 0, "b": 1}),
        ({"a": 1, "b": 5, "c": 4}, {"a": 1, "c": 0, "b": 2}),  # movers take missing ranks in rank order
        ({"a": 0, "b": 0}, {"a": 0, "b": 1}),  # a duplicate moves
    ],
)
def test_settled_ranks_are_contiguous_with_minimal_moves(
    ranks: dict[str, int], expected: dict[str, int]
) -> None:
    settled = settled_ranks(ranks)
    assert settled == expected
    assert sorted(settled.values()) == list(range(len(ranks)))


@pytest.mark.parametrize(
    ("replicas", "count", "expected"),
    [
        ([ReplicaView("a", False, 0), ReplicaView("b", False, 1), ReplicaView("c", False, 2)], 1, ["c"]),
        ([ReplicaView("a", False, 0), ReplicaView("b", True, 1), ReplicaView("c", False, 2)], 2, ["b", "c"]),
        ([ReplicaView("a", False, 0), ReplicaView("b", False, 1)], 0, []),
        ([ReplicaView("a", False, 0)], 5, ["a"]),
    ],
)
def test_replicas_to_stop_prefers_starting_then_highest_rank(
    replicas: list[ReplicaView], count: int, expected: list[str]
) -> None:
    assert replicas_to_stop(replicas, count) == expected
