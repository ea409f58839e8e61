"""KubeRay's TestCalculateConditions, TestIsInitializingTimeout and TestMarkFailedIfInitializingTimedOut
tables, plus setCondition semantics, serviceStatus, RayPhase and EndpointSlice counting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import Condition, ConditionStatus
from models.rayservice import RayServiceStatuses
from tests.workflows.decisions.rayservice.conditions import the_condition
from workflows.decisions.rayservice.conditions import (
    calculate_conditions,
    is_initializing_timeout,
    mark_failed_on_initializing_timeout,
    ray_phase,
    remove_condition,
    service_status,
    set_condition,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
TRUE, FALSE, UNKNOWN = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN


def status(
    *conditions: tuple[str, ConditionStatus, str],
    endpoints: int = 0,
    active: str = "",
    pending: str = "",
    since: datetime = NOW,
) -> RayServiceStatuses:
    return RayServiceStatuses(
        conditions=[
            Condition(type=t, status=s, reason=r, last_transition_time=since) for t, s, r in conditions
        ],
        num_serve_endpoints=endpoints,
        active_service_status={"rayClusterName": active},
        pending_service_status={"rayClusterName": pending},
    )


@pytest.mark.parametrize(
    ("original", "endpoints", "active", "pending", "condition_type", "expected"),
    [
        (None, 0, "", "", "Ready", (FALSE, "Initializing")),  # initial RayServiceReady
        (None, 0, "", "", "UpgradeInProgress", (FALSE, "Initializing")),  # initial UpgradeInProgress
        (("Ready", FALSE, "WhateverReason"), 0, "", "", "Ready", (FALSE, "WhateverReason")),
        (("Ready", TRUE, "WhateverReason"), 1, "", "", "Ready", (TRUE, "NonZeroServeEndpoints")),
        (("Ready", FALSE, "WhateverReason"), 1, "", "", "Ready", (TRUE, "NonZeroServeEndpoints")),
        (("Ready", TRUE, "NonZeroServeEndpoints"), 0, "", "", "Ready", (FALSE, "ZeroServeEndpoints")),
        (
            ("UpgradeInProgress", FALSE, "WhateverReason"),
            0,
            "active-cluster",
            "pending-cluster",
            "UpgradeInProgress",
            (TRUE, "BothActivePendingClustersExist"),
        ),
        (
            ("UpgradeInProgress", TRUE, "BothActivePendingClustersExist"),
            0,
            "active-cluster",
            "",
            "UpgradeInProgress",
            (FALSE, "NoPendingCluster"),
        ),
        (
            ("UpgradeInProgress", TRUE, "BothActivePendingClustersExist"),
            0,
            "",
            "",
            "UpgradeInProgress",
            (UNKNOWN, "NoActiveCluster"),
        ),
        (
            ("UpgradeInProgress", FALSE, "Initializing"),
            0,
            "",
            "pending-cluster",
            "UpgradeInProgress",
            (FALSE, "Initializing"),
        ),
        (
            ("UpgradeInProgress", FALSE, "InitializingTimeout"),
            0,
            "",
            "",
            "UpgradeInProgress",
            (FALSE, "InitializingTimeout"),
        ),
        (("Ready", FALSE, "Initializing"), 5, "active", "", "Ready", (TRUE, "NonZeroServeEndpoints")),
    ],
)
def test_calculate_conditions(
    original: tuple[str, ConditionStatus, str] | None,
    endpoints: int,
    active: str,
    pending: str,
    condition_type: str,
    expected: tuple[ConditionStatus, str],
) -> None:
    before = status(*([original] if original else []), endpoints=endpoints, active=active, pending=pending)
    after, events = calculate_conditions(before, {}, NOW)
    condition = the_condition(after.conditions, condition_type)
    assert (condition.status, condition.reason) == expected
    assert events == []


def test_calculate_conditions_messages_and_generation() -> None:
    before = status(endpoints=2, active="a")
    before.observed_generation = 3
    after, _ = calculate_conditions(before, {}, NOW)
    ready = the_condition(after.conditions, "Ready")
    upgrade = the_condition(after.conditions, "UpgradeInProgress")
    assert ready.message == "Number of serve endpoints is greater than 0"
    assert upgrade.message == "Active Ray cluster exists and no pending Ray cluster"
    assert ready.observed_generation == upgrade.observed_generation == 3
    assert before.conditions == []  # the input is untouched


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], False),
        ([("Ready", FALSE, "InitializingTimeout")], True),
        ([("Ready", FALSE, "ZeroServeEndpoints")], False),
        ([("Ready", TRUE, "NonZeroServeEndpoints")], False),
    ],
)
def test_is_initializing_timeout(conditions: list[tuple[str, ConditionStatus, str]], expected: bool) -> None:
    assert is_initializing_timeout(status(*conditions).conditions) is expected


@pytest.mark.parametrize(
    ("annotation", "ready", "elapsed", "times_out"),
    [
        (None, ("Ready", FALSE, "Initializing"), timedelta(hours=1), False),  # no annotation
        ("30m", ("Ready", FALSE, "Initializing"), timedelta(minutes=10), False),  # within the timeout
        ("30m", ("Ready", FALSE, "Initializing"), timedelta(minutes=35), True),
        ("30m", ("Ready", FALSE, "InitializingTimeout"), timedelta(minutes=35), False),  # already timed out
        ("30m", ("Ready", TRUE, "NonZeroServeEndpoints"), timedelta(minutes=35), False),  # not initializing
        (
            "1800",
            ("Ready", FALSE, "Initializing"),
            timedelta(minutes=30),
            True,
        ),  # integer seconds, exactly due
    ],
)
def test_mark_failed_on_initializing_timeout(
    annotation: str | None, ready: tuple[str, ConditionStatus, str], elapsed: timedelta, times_out: bool
) -> None:
    annotations = {} if annotation is None else {"ray.io/initializing-timeout": annotation}
    before = status(ready, active="active-cluster", pending="pending-cluster", since=NOW - elapsed)
    after, events = mark_failed_on_initializing_timeout(before, annotations, NOW)
    condition = the_condition(after.conditions, "Ready")
    if times_out:
        assert (condition.status, condition.reason) == (FALSE, "InitializingTimeout")
        assert "failed to become ready within the configured timeout" in condition.message
        assert after.active_service_status.ray_cluster_name == ""
        assert after.pending_service_status.ray_cluster_name == ""
        assert len(events) == 1
        assert events[0].type == "Warning"
        assert events[0].reason == "RayServiceInitializingTimeout"
        assert "RayService initializing timeout exceeded" in events[0].message
    else:
        assert (condition.status, condition.reason) == ready[1:]
        assert after.active_service_status.ray_cluster_name == "active-cluster"
        assert events == []


def test_initializing_timeout_message_uses_go_durations() -> None:
    before = status(
        ("Ready", FALSE, "Initializing"),
        ("UpgradeInProgress", FALSE, "Initializing"),
        since=NOW - timedelta(minutes=35, milliseconds=500),
    )
    after, events = calculate_conditions(before, {"ray.io/initializing-timeout": "30m"}, NOW)
    ready = the_condition(after.conditions, "Ready")
    assert ready.message == (
        "RayService failed to become ready within the configured timeout of 30m0s. "
        "Time spent initializing: 35m0.5s"
    )
    assert (
        events[0].message
        == "RayService initializing timeout exceeded after 35m0.5s (configured timeout: 30m0s)"
    )
    upgrade = the_condition(after.conditions, "UpgradeInProgress")
    assert upgrade.reason == "Initializing"


def test_set_condition_moves_transition_time_only_on_status_change() -> None:
    earlier = NOW - timedelta(hours=1)
    conditions = [Condition(type="Ready", status=FALSE, reason="A", last_transition_time=earlier)]
    same = set_condition(conditions, "Ready", FALSE, "B", "msg", 4, NOW)
    assert (same[0].reason, same[0].message, same[0].observed_generation) == ("B", "msg", 4)
    assert same[0].last_transition_time == earlier
    flipped = set_condition(conditions, "Ready", TRUE, "C", "", 4, NOW)
    assert flipped[0].last_transition_time == NOW
    added = set_condition(conditions, "Suspended", TRUE, "D", "", 4, NOW)
    assert [c.type for c in added] == ["Ready", "Suspended"]
    assert added[1].last_transition_time == NOW
    assert conditions[0].reason == "A"
    assert [c.type for c in remove_condition(added, "Ready")] == ["Suspended"]


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([("Ready", TRUE, "NonZeroServeEndpoints")], "Running"),
        ([("Ready", FALSE, "ZeroServeEndpoints")], ""),
        ([], ""),
    ],
)
def test_service_status(conditions: list[tuple[str, ConditionStatus, str]], expected: str) -> None:
    assert service_status(status(*conditions).conditions) == expected


@pytest.mark.parametrize(
    ("conditions", "active", "expected"),
    [
        ([("Ready", FALSE, "Initializing")], "", "Initializing"),
        (
            [("Ready", TRUE, "NonZeroServeEndpoints"), ("UpgradeInProgress", FALSE, "NoPendingCluster")],
            "a",
            "Running",
        ),
        ([("Ready", FALSE, "ZeroServeEndpoints")], "a", "Running"),
        (
            [("Ready", TRUE, "X"), ("UpgradeInProgress", TRUE, "BothActivePendingClustersExist")],
            "a",
            "Upgrading",
        ),
        (
            [("UpgradeInProgress", TRUE, "X"), ("RollbackInProgress", TRUE, "DesiredClusterSpecChanged")],
            "a",
            "RollingBack",
        ),
        ([("Suspending", TRUE, "SuspendRequested")], "", "Suspended"),
        ([("Suspended", TRUE, "SuspendComplete")], "", "Suspended"),
        ([("Ready", FALSE, "InitializingTimeout")], "", "Failed"),
        ([("Ready", FALSE, "ValidationFailed")], "a", "Failed"),
    ],
)
def test_ray_phase(conditions: list[tuple[str, ConditionStatus, str]], active: str, expected: str) -> None:
    assert ray_phase(status(*conditions, active=active)) == expected
