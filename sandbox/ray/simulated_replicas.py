"""Pure replica math of Ray Serve 2.60 that the simulated dashboard reproduces.

Sources (read, not copied): `serve/_private/utils.get_capacity_adjusted_num_replicas`,
`controller.calculate_target_capacity_direction`, `autoscaling_state` bounds, `replica.py` world size and
`DeploymentRankManager` (ranks contiguous once settled, released ranks reused smallest first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import Any


class Direction(StrEnum):
    """Which way `target_capacity` is moving (decides the lower autoscaling bound)."""

    UP = "UP"
    DOWN = "DOWN"


def capacity_adjusted_num_replicas(num_replicas: int, target_capacity: float | None) -> int:
    """`num_replicas` scaled by `target_capacity` percent, rounded half up, never 0 unless asked for 0."""
    if target_capacity is None or target_capacity == 100:
        return num_replicas
    if target_capacity == 0 or num_replicas == 0:
        return 0
    adjusted = Decimal(num_replicas * target_capacity) / Decimal(100)
    return max(1, int(adjusted.to_integral_value(rounding=ROUND_HALF_UP)))


def target_capacity_direction(
    previous_app_names: frozenset[str] | None,
    previous_target_capacity: float | None,
    app_names: frozenset[str],
    target_capacity: float | None,
    previous_direction: Direction | None,
) -> Direction | None:
    """The scaling direction after a PUT; `previous_app_names` is None when Serve had no config yet."""
    if previous_app_names is not None and previous_app_names == app_names:
        if previous_target_capacity == target_capacity:
            return previous_direction
        if target_capacity is None:
            return None
        if previous_target_capacity is None:
            return Direction.DOWN
        return Direction.UP if previous_target_capacity < target_capacity else Direction.DOWN
    return Direction.UP if target_capacity is not None else None


@dataclass(frozen=True)
class AutoscalingBounds:
    min_replicas: int
    max_replicas: int
    initial_replicas: int | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AutoscalingBounds:
        initial = config.get("initial_replicas")
        return cls(
            min_replicas=int(config.get("min_replicas", 1)),
            max_replicas=int(config.get("max_replicas", 1)),
            initial_replicas=None if initial is None else int(initial),
        )


def autoscaling_target_num_replicas(
    bounds: AutoscalingBounds,
    current_target: int,
    target_capacity: float | None,
    direction: Direction | None,
    *,
    config_changed: bool,
) -> int:
    """The target of an autoscaling deployment with no traffic: the current decision (or
    `initial_replicas` on a new/changed config) clipped to the capacity-adjusted bounds."""
    wanted = (
        bounds.initial_replicas if config_changed and bounds.initial_replicas is not None else current_target
    )
    if bounds.initial_replicas is not None and direction is Direction.UP:
        lower = capacity_adjusted_num_replicas(bounds.initial_replicas, target_capacity)
    else:
        lower = capacity_adjusted_num_replicas(bounds.min_replicas, target_capacity)
    upper = capacity_adjusted_num_replicas(bounds.max_replicas, target_capacity)
    return max(lower, min(upper, wanted))


def world_size(num_replicas: object) -> int:
    """What a replica sees as world_size: the configured num_replicas, not scaled by target_capacity
    (an autoscaling deployment has no num_replicas and reports 1)."""
    return num_replicas if isinstance(num_replicas, int) and not isinstance(num_replicas, bool) else 1


def smallest_free_rank(taken: Iterable[int]) -> int:
    """The rank a new replica gets: released ranks are reused, smallest first."""
    used = set(taken)
    rank = 0
    while rank in used:
        rank += 1
    return rank


def settled_ranks(ranks: Mapping[str, int]) -> dict[str, int]:
    """Ranks once a deployment is at its target: contiguous 0..N-1, moving as few replicas as possible
    (replicas whose rank is already in range keep it; the others take the missing ranks in rank order)."""
    count = len(ranks)
    kept = {replica: rank for replica, rank in ranks.items() if rank < count}
    seen: set[int] = set()
    for replica, rank in sorted(kept.items(), key=lambda item: (item[1], item[0])):
        if rank in seen:
            del kept[replica]  # a duplicate rank must move too
        seen.add(rank)
    missing = iter(sorted(set(range(count)) - set(kept.values())))
    movers = sorted((rank, replica) for replica, rank in ranks.items() if replica not in kept)
    result = dict(kept)
    for _rank, replica in movers:
        result[replica] = next(missing)
    return result


@dataclass(frozen=True)
class ReplicaView:
    """What choosing replicas to stop needs to know about one replica."""

    replica_id: str
    starting: bool
    rank: int


def replicas_to_stop(replicas: Sequence[ReplicaView], count: int) -> list[str]:
    """Which replicas a downscale stops: ones still starting first, then the highest ranks (so the
    remaining ranks stay contiguous, as observed on Ray 2.60)."""
    ordered = sorted(replicas, key=lambda replica: (not replica.starting, -replica.rank, replica.replica_id))
    return [replica.replica_id for replica in ordered[: max(0, count)]]
