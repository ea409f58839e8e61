"""handleSuspend: KubeRay's resume and observedGeneration tests, and the whole Suspending -> Suspended
cycle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import Condition, ConditionStatus
from models.rayservice import RayServiceStatuses
from tests.workflows.decisions.rayservice.conditions import the_condition
from workflows.decisions.rayservice.suspend import (
    SuspendAction,
    begin_suspending,
    complete_suspend,
    is_suspend_operative,
    resume_from_suspend,
    suspend_action,
    suspending_in_progress,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
HOUR_AGO = NOW - timedelta(hours=1)
TRUE, FALSE = ConditionStatus.TRUE, ConditionStatus.FALSE


def with_conditions(*conditions: tuple[str, ConditionStatus, str], generation: int = 0) -> RayServiceStatuses:
    return RayServiceStatuses(
        observed_generation=generation,
        conditions=[
            Condition(type=t, status=s, reason=r, last_transition_time=HOUR_AGO) for t, s, r in conditions
        ],
    )


def summary(status: RayServiceStatuses) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status.value, c.reason) for c in status.conditions}


@pytest.mark.parametrize(
    ("spec_suspend", "conditions", "expected"),
    [
        (False, [], SuspendAction.NONE),
        (True, [], SuspendAction.BEGIN),
        (True, [("Suspending", TRUE, "SuspendRequested")], SuspendAction.DELETE_OWNED),
        (False, [("Suspending", TRUE, "SuspendRequested")], SuspendAction.DELETE_OWNED),  # atomic
        (True, [("Suspended", TRUE, "SuspendComplete")], SuspendAction.STAY_SUSPENDED),
        (False, [("Suspended", TRUE, "SuspendComplete")], SuspendAction.RESUME),
        (False, [("Suspended", FALSE, "RayServiceResumed")], SuspendAction.NONE),
    ],
)
def test_suspend_action(
    spec_suspend: bool, conditions: list[tuple[str, ConditionStatus, str]], expected: SuspendAction
) -> None:
    status = with_conditions(*conditions)
    assert suspend_action(spec_suspend, status) is expected
    assert is_suspend_operative(status) is (
        expected in (SuspendAction.DELETE_OWNED, SuspendAction.STAY_SUSPENDED, SuspendAction.RESUME)
    )


def test_entering_suspending_bumps_observed_generation_and_clears_the_service_statuses() -> None:
    before = RayServiceStatuses(
        observed_generation=2,
        num_serve_endpoints=3,
        service_status="Running",
        active_service_status={"rayClusterName": "svc-a"},
        pending_service_status={"rayClusterName": "svc-b"},
    )
    after = begin_suspending(before, generation=5, now=NOW)
    assert after.observed_generation == 5
    suspending = the_condition(after.conditions, "Suspending")
    assert suspending.observed_generation == 5
    assert summary(after) == {
        "Suspending": ("True", "SuspendRequested"),
        "Ready": ("False", "SuspendInProgress"),
        "UpgradeInProgress": ("False", "SuspendInProgress"),
        "RollbackInProgress": ("False", "SuspendInProgress"),
    }
    assert after.active_service_status.ray_cluster_name == after.pending_service_status.ray_cluster_name == ""
    assert (after.num_serve_endpoints, after.service_status) == (0, "")
    assert before.active_service_status.ray_cluster_name == "svc-a"


def test_idle_suspended_keeps_observed_generation() -> None:
    status = with_conditions(("Suspended", TRUE, "SuspendComplete"), generation=4)
    assert suspend_action(True, status) is SuspendAction.STAY_SUSPENDED
    assert status.observed_generation == 4


def test_suspending_then_suspended() -> None:
    staged = begin_suspending(RayServiceStatuses(), generation=1, now=NOW)
    waiting = suspending_in_progress(staged, NOW)
    assert summary(waiting)["Suspending"] == ("True", "SuspendInProgress")
    done = complete_suspend(waiting, NOW)
    assert summary(done) == {
        "Suspending": ("False", "SuspendComplete"),
        "Ready": ("False", "SuspendComplete"),
        "UpgradeInProgress": ("False", "SuspendComplete"),
        "RollbackInProgress": ("False", "SuspendComplete"),
        "Suspended": ("True", "SuspendComplete"),
    }
    assert suspend_action(True, done) is SuspendAction.STAY_SUSPENDED


def test_resume_resets_ready_and_upgrade_to_initializing_with_a_fresh_transition_time() -> None:
    suspended = with_conditions(
        ("Suspended", TRUE, "SuspendComplete"),
        ("Suspending", FALSE, "SuspendComplete"),
        ("Ready", FALSE, "SuspendComplete"),
        ("UpgradeInProgress", FALSE, "SuspendComplete"),
        ("RollbackInProgress", FALSE, "SuspendComplete"),
    )
    resumed = resume_from_suspend(suspended, generation=7, now=NOW)
    assert resumed.observed_generation == 7
    for condition_type in ("Ready", "UpgradeInProgress"):
        condition = the_condition(resumed.conditions, condition_type)
        assert (condition.status, condition.reason) == (FALSE, "Initializing")
        assert condition.last_transition_time == NOW  # re-arms the initializing timeout
    resumed_condition = the_condition(resumed.conditions, "Suspended")
    assert (resumed_condition.status, resumed_condition.reason) == (FALSE, "RayServiceResumed")
    assert suspend_action(False, resumed) is SuspendAction.NONE
