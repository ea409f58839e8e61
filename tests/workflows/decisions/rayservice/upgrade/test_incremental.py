"""Incremental upgrade decisions: KubeRay's reconcileServeTargetCapacity, checkIfNeedTargetCapacityUpdate,
reconcileRollbackState and shouldCompleteIncrementalRollback tables; calculateTrafficRoutedPercent timing,
rollback and readiness; raypilot's exact next-step time, pause, promote and replica gating."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import Condition, ConditionStatus, find_condition, is_condition_true
from models.rayservice import ClusterUpgradeOptions, RayServiceStatus, RayServiceStatuses
from tests.workflows.decisions.rayservice.conditions import the_condition
from workflows.decisions.rayservice.upgrade.incremental import (
    CapacityStep,
    TrafficMoment,
    capacity_step,
    complete_incremental_rollback,
    initial_pending_target_capacity,
    is_incremental_upgrade_complete,
    next_capacity,
    rollback_state,
    should_complete_incremental_rollback,
    target_capacity_update_needed,
    traffic_step,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
UPGRADING = ("UpgradeInProgress", "BothActivePendingClustersExist")
ROLLING_BACK = ("RollbackInProgress", "DesiredClusterSpecChanged")


def options(surge: int = 100, step: int = 10, interval: int = 30) -> ClusterUpgradeOptions:
    return ClusterUpgradeOptions(
        max_surge_percent=surge, step_size_percent=step, interval_seconds=interval, gateway_class_name="istio"
    )


def status(
    active: tuple[int | None, int | None] = (100, 100),
    pending: tuple[int | None, int | None] = (0, 0),
    *conditions: tuple[str, str],
    active_last: datetime | None = None,
    pending_last: datetime | None = None,
    names: tuple[str, str] = ("active", "pending"),
) -> RayServiceStatuses:
    """active/pending = (targetCapacity, trafficRoutedPercent)."""
    return RayServiceStatuses(
        conditions=[Condition(type=t, status=ConditionStatus.TRUE, reason=r) for t, r in conditions],
        active_service_status=RayServiceStatus(
            ray_cluster_name=names[0],
            target_capacity=active[0],
            traffic_routed_percent=active[1],
            last_traffic_migrated_time=active_last,
        ),
        pending_service_status=RayServiceStatus(
            ray_cluster_name=names[1],
            target_capacity=pending[0],
            traffic_routed_percent=pending[1],
            last_traffic_migrated_time=pending_last,
        ),
    )


@pytest.mark.parametrize(
    ("side", "active", "pending", "surge", "goal"),
    [
        ("pending", (70, 0), (10, 10), 20, 30),  # total <= 100: scale the pending cluster up
        ("active", (80, 0), (30, 30), 20, 60),  # total > 100: scale the active cluster down
        ("active", (70, 0), (10, 10), 20, None),  # not the cluster to change
        ("pending", (80, 0), (30, 30), 20, None),
        ("pending", (100, 100), (50, 25), 50, None),  # traffic has not caught up with capacity yet
        ("pending", (10, 0), (90, 90), 50, 100),  # capped at 100
        ("active", (30, 0), (100, 100), 50, 0),  # floored at 0
        ("pending", (None, None), (None, None), 50, 50),  # unset: active 100, pending 0
    ],
)
def test_reconcile_serve_target_capacity(
    side: str, active: tuple[int, int], pending: tuple[int, int], surge: int, goal: int | None
) -> None:
    assert next_capacity(status(active, pending, UPGRADING), options(surge), side) == goal  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("side", "active", "pending", "goal"),
    [
        ("pending", (50, 50), (100, 50), 50),  # rollback: total > 100 -> the pending cluster shrinks first
        ("active", (50, 50), (100, 50), None),
        ("active", (50, 50), (50, 50), 100),  # total <= 100 -> the active cluster grows back
        ("active", (50, 40), (50, 60), None),  # active traffic has not caught up with active capacity
        ("pending", (100, 100), (50, 0), 0),
    ],
)
def test_reconcile_serve_target_capacity_during_rollback(
    side: str, active: tuple[int, int], pending: tuple[int, int], goal: int | None
) -> None:
    rolling = status(active, pending, UPGRADING, ROLLING_BACK)
    assert next_capacity(rolling, options(surge=50), side) == goal  # type: ignore[arg-type]


def test_next_capacity_needs_options() -> None:
    with pytest.raises(ValueError, match="Missing RayService ClusterUpgradeOptions during upgrade"):
        next_capacity(status(), None, "pending")


@pytest.mark.parametrize(
    ("current", "gateway_ready", "route_ready", "expected"),
    [
        (
            status(names=("", "")),
            True,
            True,
            (
                False,
                "Both active and pending RayCluster instances are required for "
                "NewClusterWithIncrementalUpgrade.",
            ),
        ),
        (
            status(),
            False,
            True,
            (False, "Gateway for RayService NewClusterWithIncrementalUpgrade is not ready."),
        ),
        (
            status(),
            True,
            False,
            (False, "HTTPRoute for RayService NewClusterWithIncrementalUpgrade is not ready."),
        ),
        (
            status((None, 100)),
            True,
            True,
            (True, "Active RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."),
        ),
        (
            status((100, 100), (0, None)),
            True,
            True,
            (True, "Pending RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."),
        ),
        (
            status((100, 100), (0, 0), ROLLING_BACK),
            True,
            True,
            (False, "Rollback complete: all traffic has been restored to the active cluster."),
        ),
        (
            status((50, 50), (50, 50), ROLLING_BACK),
            True,
            True,
            (True, "Rollback in progress: traffic is being restored to the active cluster."),
        ),
        (
            status((0, 0), (100, 100)),
            True,
            True,
            (
                False,
                "All traffic has migrated to the upgraded cluster and NewClusterWithIncrementalUpgrade is "
                "complete.",
            ),
        ),
        (status((70, 70), (30, 30)), True, True, (True, "Pending RayCluster has not finished scaling up.")),
        (
            status((50, 0), (100, 100)),
            True,
            True,
            (True, "Active RayCluster TargetCapacity has not finished scaling down."),
        ),
    ],
)
def test_check_if_need_target_capacity_update(
    current: RayServiceStatuses, gateway_ready: bool, route_ready: bool, expected: tuple[bool, str]
) -> None:
    assert target_capacity_update_needed(current, gateway_ready, route_ready) == expected


@pytest.mark.parametrize(
    ("active", "pending", "last", "ready", "expected"),
    [
        ((100, 100), (30, 0), NOW - timedelta(seconds=31), False, (100, 0, "readiness", None)),
        ((100, 100), (30, 0), NOW, True, (100, 0, "interval", NOW + timedelta(seconds=30))),
        (
            (100, 100),
            (60, 0),
            NOW - timedelta(seconds=31),
            True,
            (90, 10, "interval", NOW + timedelta(seconds=30)),
        ),
        (
            (100, 100),
            (5, 0),
            NOW - timedelta(seconds=31),
            True,
            (95, 5, "capacity", None),
        ),  # capped, then wait
        (
            (100, 100),
            (30, 0),
            None,
            True,
            (90, 10, "interval", NOW + timedelta(seconds=30)),
        ),  # never migrated
        (
            (100, 70),
            (30, 30),
            NOW - timedelta(hours=1),
            True,
            (70, 30, "capacity", None),
        ),  # at capacity: wait
        (
            (100, 100),
            (30, 0),
            NOW - timedelta(seconds=30),
            True,
            (90, 10, "interval", NOW + timedelta(seconds=30)),
        ),
    ],
)
def test_traffic_step(
    active: tuple[int, int],
    pending: tuple[int, int],
    last: datetime | None,
    ready: bool,
    expected: tuple[int, int, str, datetime | None],
) -> None:
    step = traffic_step(
        status(active, pending, UPGRADING, pending_last=last),
        TrafficMoment(options(), NOW, pending_ready=ready),
    )
    assert (step.active_weight, step.pending_weight, step.waiting_for, step.next_step_at) == expected
    assert step.moved is ((step.active_weight, step.pending_weight) != (active[1], pending[1]))


def test_traffic_step_needs_options() -> None:
    with pytest.raises(ValueError, match=r"ClusterUpgradeOptions are not set during upgrade\."):
        traffic_step(status(), TrafficMoment(None, NOW, pending_ready=True))


@pytest.mark.parametrize(
    ("active", "pending", "active_ready", "expected"),
    [
        ((100, 50), (50, 50), True, (60, 40)),  # back toward the active cluster, pending readiness irrelevant
        ((60, 50), (50, 50), True, (60, 40)),  # capped at the active target capacity
        ((100, 100), (50, 0), True, (100, 0)),  # traffic already all back: wait for capacity
        ((100, 50), (50, 50), False, (50, 50)),  # raypilot: not onto an active cluster that is not ready
    ],
)
def test_traffic_step_during_rollback(
    active: tuple[int, int], pending: tuple[int, int], active_ready: bool, expected: tuple[int, int]
) -> None:
    rolling = status(active, pending, UPGRADING, ROLLING_BACK, active_last=NOW - timedelta(minutes=5))
    step = traffic_step(
        rolling, TrafficMoment(options(), NOW, pending_ready=False, active_ready=active_ready)
    )
    assert (step.active_weight, step.pending_weight) == expected


def test_rollback_traffic_uses_the_active_side_migration_time() -> None:
    rolling = status(
        (100, 50),
        (50, 50),
        UPGRADING,
        ROLLING_BACK,
        active_last=NOW - timedelta(seconds=10),
        pending_last=NOW - timedelta(hours=1),
    )
    step = traffic_step(rolling, TrafficMoment(options(), NOW, pending_ready=True))
    assert (step.moved, step.next_step_at) == (False, NOW + timedelta(seconds=20))


def test_paused_and_promoted_traffic() -> None:
    upgrading = status((100, 100), (60, 0), UPGRADING, pending_last=NOW - timedelta(hours=1))
    paused = traffic_step(upgrading, TrafficMoment(options(), NOW, pending_ready=True, paused=True))
    assert (paused.moved, paused.waiting_for, paused.next_step_at) == (False, "paused", None)
    recent = status((100, 100), (60, 0), UPGRADING, pending_last=NOW)
    promoted = traffic_step(recent, TrafficMoment(options(), NOW, pending_ready=True, promote=True))
    assert (promoted.active_weight, promoted.pending_weight) == (40, 60)  # no interval, no step size
    assert promoted.next_step_at is None
    unready = traffic_step(recent, TrafficMoment(options(), NOW, pending_ready=False, promote=True))
    assert unready.moved is False  # promote never sends traffic to replicas that do not run


@pytest.mark.parametrize(
    ("active", "pending", "gaining_ready", "paused", "promote", "expected"),
    [
        ((100, 100), (0, 0), True, False, False, CapacityStep("pending", 50)),
        ((100, 100), (0, 0), False, False, False, None),  # the pending cluster does not run its capacity yet
        ((100, 100), (0, 0), True, True, False, None),  # paused
        ((100, 50), (50, 50), True, False, False, CapacityStep("active", 50)),
        ((50, 50), (50, 50), True, False, False, CapacityStep("pending", 100)),
        ((100, 100), (0, 0), True, False, True, CapacityStep("pending", 100)),  # promote: straight to 100
        ((100, 0), (100, 100), True, False, True, CapacityStep("active", 0)),
        ((0, 0), (100, 100), True, False, False, None),  # done
    ],
)
def test_capacity_step(
    active: tuple[int, int],
    pending: tuple[int, int],
    gaining_ready: bool,
    paused: bool,
    promote: bool,
    expected: CapacityStep | None,
) -> None:
    current = status(active, pending, UPGRADING)
    assert (
        capacity_step(current, options(surge=50), gaining_ready, paused=paused, promote=promote) == expected
    )


@pytest.mark.parametrize(
    ("active_name", "active_capacity", "pending_capacity", "expected"),
    [("", None, None, 100), ("active", 100, None, 0), ("active", 100, 30, None), ("", 100, None, None)],
)
def test_initial_pending_target_capacity(
    active_name: str, active_capacity: int | None, pending_capacity: int | None, expected: int | None
) -> None:
    current = status((active_capacity, 100), (pending_capacity, None), names=(active_name, "pending"))
    assert initial_pending_target_capacity(current) == expected


@pytest.mark.parametrize(
    ("active", "pending", "pending_exists", "expected"),
    [
        ((0, 0), (100, 100), True, True),
        ((0, 0), (100, 100), False, False),
        ((50, 0), (100, 100), True, False),
        ((0, 0), (100, 90), True, False),
        ((None, 0), (100, 100), True, False),
    ],
)
def test_is_incremental_upgrade_complete(
    active: tuple[int | None, int], pending: tuple[int, int], pending_exists: bool, expected: bool
) -> None:
    assert is_incremental_upgrade_complete(status(active, pending), pending_exists) is expected


@pytest.mark.parametrize(
    ("goal", "pending_hash", "rolling_back", "expected"),
    [
        ("B", "B", False, False),  # upgrade on track
        ("A", "B", False, True),  # reverted to the original: roll back
        ("A", "B", True, True),
        ("B", "B", True, False),  # back to the upgrade's spec: cancel the rollback
        ("C", "B", False, True),  # a third spec: roll back first
        ("A", "A", False, True),  # fast rollback (pending created with the original spec)
    ],
)
def test_reconcile_rollback_state(goal: str, pending_hash: str, rolling_back: bool, expected: bool) -> None:
    before = status((100, 100), (30, 0), UPGRADING, *([ROLLING_BACK] if rolling_back else []))
    after = rollback_state(before, goal, "A", pending_hash, NOW)
    assert is_condition_true(after.conditions, "RollbackInProgress") is expected


@pytest.mark.parametrize(
    ("goal", "message"),
    [
        ("A", "Goal state reverted to original cluster, rolling back."),
        ("C", "Goal state changed mid-upgrade, rolling back to original cluster."),
    ],
)
def test_rollback_messages(goal: str, message: str) -> None:
    after = rollback_state(status((100, 100), (30, 0), UPGRADING), goal, "A", "B", NOW)
    condition = the_condition(after.conditions, "RollbackInProgress")
    assert (condition.reason, condition.message, condition.last_transition_time) == (
        "DesiredClusterSpecChanged",
        message,
        NOW,
    )


def test_an_aborted_goal_keeps_rolling_back() -> None:
    before = status((100, 100), (30, 0), UPGRADING, ("RollbackInProgress", "UpgradeAborted"))
    assert is_condition_true(
        rollback_state(before, "B", "A", "B", NOW, aborted_goal_hash="B").conditions, "RollbackInProgress"
    )
    assert not is_condition_true(rollback_state(before, "B", "A", "B", NOW).conditions, "RollbackInProgress")
    started = rollback_state(
        status((100, 100), (30, 0), UPGRADING), "B", "A", "B", NOW, aborted_goal_hash="B"
    )
    condition = the_condition(started.conditions, "RollbackInProgress")
    assert condition.reason == "UpgradeAborted"


@pytest.mark.parametrize(
    ("active", "pending", "pending_head_ready", "expected"),
    [
        ((100, 100), (0, 0), True, True),
        ((100, 100), (30, 0), False, True),  # unhealthy pending cluster
        ((100, 100), (0, 0), False, True),  # no pending cluster
        ((100, 100), (50, 0), True, False),
        ((100, 90), (0, 10), True, False),
    ],
)
def test_should_complete_incremental_rollback(
    active: tuple[int, int], pending: tuple[int, int], pending_head_ready: bool, expected: bool
) -> None:
    current = status(active, pending)
    complete = should_complete_incremental_rollback(
        current.active_service_status, current.pending_service_status, pending_head_ready
    )
    assert complete is expected


def test_complete_incremental_rollback() -> None:
    done = complete_incremental_rollback(status((100, 100), (0, 0), UPGRADING, ROLLING_BACK), NOW)
    assert done.pending_service_status == RayServiceStatus()
    assert find_condition(done.conditions, "RollbackInProgress") is None
    upgrade = the_condition(done.conditions, "UpgradeInProgress")
    assert (upgrade.status, upgrade.reason, upgrade.message) == (
        ConditionStatus.FALSE,
        "NoPendingCluster",
        "Rollback complete, active Ray cluster exists and no pending Ray cluster",
    )
