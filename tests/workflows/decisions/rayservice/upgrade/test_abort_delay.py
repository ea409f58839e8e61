"""abortScaleDownDelaySeconds of raypilot.io/rollout: which cluster an abort keeps, when its deletion is
scheduled, until when it is said to be kept, and the condition and Event (tables)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import ConditionStatus
from models.rayservice import RayServiceConditionType, RayServiceStatus, RayServiceStatuses
from workflows.decisions.rayservice.conditions import set_condition
from workflows.decisions.rayservice.upgrade.abort_delay import (
    ABORTED_CLUSTER_KEPT_CONDITION,
    REASON_KEPT_FOR_DEBUGGING,
    dropped_aborted_cluster,
    keep_aborted_cluster,
    still_kept,
    with_kept_condition,
)
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LATER = T0 + timedelta(seconds=600)


def status(pending: str = "new", rollback: bool = True) -> RayServiceStatuses:
    result = RayServiceStatuses(
        active_service_status=RayServiceStatus(ray_cluster_name="old"),
        pending_service_status=RayServiceStatus(ray_cluster_name=pending),
    )
    if rollback:
        result.conditions = set_condition(
            result.conditions,
            RayServiceConditionType.ROLLBACK_IN_PROGRESS,
            ConditionStatus.TRUE,
            "UpgradeAborted",
            "m",
            1,
            T0,
        )
    return result


ABORTED = UpgradeControls(aborted_goal_hash="h2")


@pytest.mark.parametrize(
    ("before", "after", "controls", "cluster"),
    [
        (("old", "new"), ("old", ""), ABORTED, "new"),  # an aborted upgrade's rollback completed
        (("old", "new"), ("old", ""), UpgradeControls(), ""),  # a reverted spec: KubeRay's rollback
        (("old", "new"), ("new", ""), ABORTED, ""),  # promoted (it serves)
        (("old", "new"), ("old", "new"), ABORTED, ""),  # the rollback still runs
        (("old", ""), ("old", ""), ABORTED, ""),  # no pending cluster
    ],
)
def test_which_cluster_is_the_aborted_one(
    before: tuple[str, str], after: tuple[str, str], controls: UpgradeControls, cluster: str
) -> None:
    assert dropped_aborted_cluster(before, after, controls) == cluster


@pytest.mark.parametrize(
    ("schedule", "aborted", "existing", "current", "delay", "expected_schedule", "kept", "still", "began"),
    [
        # still pending (the rollback runs): nothing yet, the cluster stays recorded
        ({}, "new", ["old", "new"], ("old", "new"), 600, {}, {}, "new", ""),
        # left over: its deletion is due at the end of the hold
        ({}, "new", ["old", "new"], ("old", ""), 600, {"new": LATER}, {"new": LATER}, "", "new"),
        # already scheduled (e.g. a hold begun before): the schedule wins
        ({"new": T0 + timedelta(seconds=5)}, "new", ["old", "new"], ("old", ""), 600,
         {"new": T0 + timedelta(seconds=5)}, {}, "", ""),
        # without the setting: KubeRay's deletion delay (the cleanup schedules it)
        ({}, "new", ["old", "new"], ("old", ""), None, {}, {}, "", ""),
        # gone already, or serving again: forgotten
        ({}, "new", ["old"], ("old", ""), 600, {}, {}, "", ""),
        ({}, "new", ["new"], ("new", ""), 600, {}, {}, "", ""),
        # nothing aborted
        ({"x": T0}, "", ["old", "x"], ("old", ""), 600, {"x": T0}, {}, "", ""),
    ],
)  # fmt: skip
def test_when_the_aborted_cluster_is_held(
    schedule: dict[str, datetime],
    aborted: str,
    existing: list[str],
    current: tuple[str, str],
    delay: int | None,
    expected_schedule: dict[str, datetime],
    kept: dict[str, datetime],
    still: str,
    began: str,
) -> None:
    hold = keep_aborted_cluster(schedule, {}, aborted, existing, current, delay, T0)
    assert (hold.schedule, hold.kept, hold.aborted, hold.began) == (expected_schedule, kept, still, began)


@pytest.mark.parametrize(
    ("schedule", "now", "kept"),
    [
        ({"new": LATER}, T0, {"new": LATER}),
        ({"new": LATER}, LATER, {}),  # its time came: drained and deleted now
        ({}, T0, {}),  # deleted (or active or pending again)
    ],
)
def test_until_when_a_cluster_is_said_to_be_kept(
    schedule: dict[str, datetime], now: datetime, kept: dict[str, datetime]
) -> None:
    assert still_kept({"new": LATER}, schedule, now) == kept


def test_the_condition_says_until_when_and_the_event_marks_the_hold() -> None:
    held, [event] = with_kept_condition(status(pending="", rollback=False), {"new": LATER}, "new", T0)
    [condition] = [c for c in held.conditions if c.type == ABORTED_CLUSTER_KEPT_CONDITION]
    assert (condition.status, condition.reason) == (ConditionStatus.TRUE, REASON_KEPT_FOR_DEBUGGING)
    assert condition.message.startswith(
        "RayCluster new of the aborted upgrade is kept for debugging until 2026-01-01T00:10:00Z"
    )
    assert (event.type, event.reason) == ("Normal", REASON_KEPT_FOR_DEBUGGING)
    assert "until 2026-01-01T00:10:00Z, then deleted" in event.message
    same, none = with_kept_condition(held, {"new": LATER}, "", T0 + timedelta(seconds=1))
    assert (same, none) == (held, [])
    gone, no_event = with_kept_condition(held, {}, "", LATER)
    assert not any(c.type == ABORTED_CLUSTER_KEPT_CONDITION for c in gone.conditions)
    assert no_event == []
    untouched = status(pending="", rollback=False)
    assert with_kept_condition(untouched, {}, "", T0) == (untouched, [])
