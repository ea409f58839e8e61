"""progressDeadlineSeconds of raypilot.io/rollout: the verdict (table) and what Abort and Degraded do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import ConditionStatus, is_condition_true
from models.rayservice import RayServiceConditionType, RayServiceStatus, RayServiceStatuses
from models.rollout import OnProgressDeadline
from workflows.decisions.rayservice.conditions import set_condition
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
from workflows.decisions.rayservice.upgrade.progress_deadline import (
    ROLLOUT_PROGRESSING_CONDITION,
    DeadlineVerdict,
    deadline_exceeded,
    new_cluster_ready_in_time,
    progress_deadline_verdict,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Type = RayServiceConditionType


def upgrading(pending: str = "new", rolling_back: bool = False) -> RayServiceStatuses:
    status = RayServiceStatuses(
        active_service_status=RayServiceStatus(ray_cluster_name="old"),
        pending_service_status=RayServiceStatus(ray_cluster_name=pending),
    )
    upgrade = ConditionStatus.TRUE if pending else ConditionStatus.FALSE
    status.conditions = set_condition(status.conditions, Type.UPGRADE_IN_PROGRESS, upgrade, "r", "m", 1, T0)
    if rolling_back:
        status.conditions = set_condition(
            status.conditions, Type.ROLLBACK_IN_PROGRESS, ConditionStatus.TRUE, "r", "m", 1, T0
        )
    return status


@pytest.mark.parametrize(
    ("status", "seconds", "ready", "settled", "now", "expected"),
    [
        (upgrading(), None, "", "", 999, DeadlineVerdict("none")),  # no deadline set
        (upgrading(), 60, "", "", 10, DeadlineVerdict("wait", T0 + timedelta(seconds=60))),
        (upgrading(), 60, "", "", 60, DeadlineVerdict("exceeded")),
        (upgrading(), 60, "new", "", 30, DeadlineVerdict("ready")),  # ready in time: the clock stops
        (upgrading(""), 60, "new", "", 30, DeadlineVerdict("ready")),  # promoted in the same pass
        (upgrading(), 60, "", "new", 999, DeadlineVerdict("none")),  # settled: acted on once only
        (upgrading(), 60, "new", "new", 999, DeadlineVerdict("none")),
        (upgrading("", False), 60, "", "", 999, DeadlineVerdict("none")),  # no upgrade
        (upgrading(rolling_back=True), 60, "", "", 999, DeadlineVerdict("none")),  # rolling back already
        (upgrading("newer"), 60, "", "new", 999, DeadlineVerdict("exceeded")),  # another cluster, its own
    ],
)
def test_verdict(
    status: RayServiceStatuses,
    seconds: int | None,
    ready: str,
    settled: str,
    now: int,
    expected: DeadlineVerdict,
) -> None:
    assert progress_deadline_verdict(status, seconds, ready, settled, T0 + timedelta(seconds=now)) == expected


def test_abort_rolls_back_and_remembers_the_aborted_goal() -> None:
    controls, status, event = deadline_exceeded(
        upgrading(), UpgradeControls(paused=True), OnProgressDeadline.ABORT, 60, "goal-hash", T0
    )
    assert controls == UpgradeControls(aborted_goal_hash="goal-hash", promote_requested=True)  # at once
    rollback = next(c for c in status.conditions if c.type == Type.ROLLBACK_IN_PROGRESS)
    assert (rollback.status, rollback.reason) == (ConditionStatus.TRUE, "ProgressDeadlineExceeded")
    progressing = next(c for c in status.conditions if c.type == ROLLOUT_PROGRESSING_CONDITION)
    assert (progressing.status, progressing.reason) == (ConditionStatus.FALSE, "ProgressDeadlineExceeded")
    assert (event.type, event.reason) == ("Warning", "ProgressDeadlineExceeded")
    assert event.message == (
        "RayCluster new was not ready 60 s after the upgrade began; rolling back to the active cluster "
        "(onProgressDeadline: Abort)."
    )


def test_degraded_only_says_so() -> None:
    controls, status, event = deadline_exceeded(
        upgrading(), UpgradeControls(), OnProgressDeadline.DEGRADED, 60, "goal-hash", T0
    )
    assert controls == UpgradeControls()
    assert not is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS)
    assert event.message.endswith("the upgrade keeps waiting (onProgressDeadline: Degraded).")


def test_ready_in_time() -> None:
    status = new_cluster_ready_in_time(upgrading(), "new", T0)
    progressing = next(c for c in status.conditions if c.type == ROLLOUT_PROGRESSING_CONDITION)
    assert (progressing.status, progressing.reason) == (ConditionStatus.TRUE, "NewClusterReady")
