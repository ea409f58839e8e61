"""raypilot's upgrade controls (pause, resume, promote, abort) and the Web UI detail line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import Condition, ConditionStatus, find_condition, is_condition_true
from models.rayservice import RayService
from tests.workflows.decisions.rayservice.conditions import the_condition
from workflows.decisions.rayservice.upgrade.controls import (
    UpgradeControlRejected,
    UpgradeControls,
    abort_upgrade,
    new_cluster_promote_rejection,
    pause_upgrade,
    promote_upgrade,
    resume_upgrade,
    settle_upgrade_controls,
    upgrade_detail_line,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def rayservice(
    *true_conditions: str, traffic: tuple[int, int] = (40, 60), capacity: tuple[int, int] = (100, 60)
) -> RayService:
    return RayService.model_validate(
        {
            "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"rayClusterConfig": {"headGroupSpec": {"template": {}}}},
            "status": {
                "conditions": [{"type": t, "status": "True", "reason": "X"} for t in true_conditions],
                "activeServiceStatus": {
                    "rayClusterName": "a",
                    "trafficRoutedPercent": traffic[0],
                    "targetCapacity": capacity[0],
                },
                "pendingServiceStatus": {
                    "rayClusterName": "b",
                    "trafficRoutedPercent": traffic[1],
                    "targetCapacity": capacity[1],
                },
            },
        }
    )


UPGRADING = rayservice("UpgradeInProgress")
IDLE = rayservice()


def control(status_conditions: list[Condition]) -> tuple[str, str]:
    condition = the_condition(status_conditions, "UpgradeControl")
    return condition.status.value, condition.reason


def test_pause_and_resume() -> None:
    paused, status = pause_upgrade(UpgradeControls(), UPGRADING, NOW)
    assert paused.paused is True
    assert control(status.conditions) == ("True", "Paused")
    with pytest.raises(UpgradeControlRejected, match="already paused"):
        pause_upgrade(paused, UPGRADING, NOW)
    resumed, status = resume_upgrade(paused, UPGRADING.model_copy(update={"status": status}), NOW)
    assert resumed.paused is False
    assert control(status.conditions) == ("False", "Resumed")
    with pytest.raises(UpgradeControlRejected, match="not paused"):
        resume_upgrade(resumed, UPGRADING, NOW)


CONTROLS = {
    "pause": lambda: pause_upgrade(UpgradeControls(paused=True), IDLE, NOW),
    "resume": lambda: resume_upgrade(UpgradeControls(paused=True), IDLE, NOW),
    "promote": lambda: promote_upgrade(UpgradeControls(), IDLE, NOW),
    "abort": lambda: abort_upgrade(UpgradeControls(), IDLE, "hash", NOW),
}


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_every_control_is_rejected_without_an_upgrade(name: str) -> None:
    expected = f"{name} rejected: no upgrade is in progress for RayService ns/svc"
    with pytest.raises(UpgradeControlRejected, match=expected):
        CONTROLS[name]()


def test_promote_unpauses_and_is_refused_during_a_rollback() -> None:
    controls, status = promote_upgrade(UpgradeControls(paused=True), UPGRADING, NOW)
    assert controls == UpgradeControls(paused=False, promote_requested=True)
    assert control(status.conditions) == ("True", "PromoteRequested")
    with pytest.raises(UpgradeControlRejected, match="rollback is in progress"):
        promote_upgrade(UpgradeControls(), rayservice("UpgradeInProgress", "RollbackInProgress"), NOW)


def test_abort_starts_a_rollback_and_remembers_the_goal() -> None:
    controls, status = abort_upgrade(
        UpgradeControls(paused=True, promote_requested=True), UPGRADING, "goal-b", NOW
    )
    assert controls == UpgradeControls(aborted_goal_hash="goal-b")
    rollback = the_condition(status.conditions, "RollbackInProgress")
    assert (rollback.status, rollback.reason) == (ConditionStatus.TRUE, "UpgradeAborted")
    assert control(status.conditions) == ("True", "AbortRequested")
    with pytest.raises(UpgradeControlRejected, match="already in progress"):
        abort_upgrade(controls, UPGRADING.model_copy(update={"status": status}), "goal-b", NOW)


def test_settle_after_the_upgrade_ended() -> None:
    _, paused_status = pause_upgrade(UpgradeControls(), UPGRADING, NOW)
    still_upgrading, status = settle_upgrade_controls(
        UpgradeControls(paused=True, aborted_goal_hash="b"), paused_status, "b"
    )
    assert still_upgrading == UpgradeControls(paused=True, aborted_goal_hash="b")
    assert status is paused_status
    ended = paused_status.model_copy(deep=True)
    ended.conditions = [c for c in ended.conditions if c.type != "UpgradeInProgress"]
    controls, settled = settle_upgrade_controls(
        UpgradeControls(paused=True, aborted_goal_hash="b"), ended, "b"
    )
    assert controls == UpgradeControls(aborted_goal_hash="b")  # same spec: the abort still holds
    assert find_condition(settled.conditions, "UpgradeControl") is None
    controls, _ = settle_upgrade_controls(controls, ended, "c")
    assert controls == UpgradeControls()  # a new spec: the abort is forgotten
    assert not is_condition_true(settled.conditions, "RollbackInProgress")


@pytest.mark.parametrize(
    ("status", "kwargs", "expected"),
    [
        (
            UPGRADING,
            {"next_step_at": NOW + timedelta(seconds=11, milliseconds=200)},
            "traffic 40/60, capacity 100/60, next step in 12 s",
        ),
        (
            UPGRADING,
            {"waiting_for": "capacity"},
            "traffic 40/60, capacity 100/60, waiting for target capacity",
        ),
        (
            UPGRADING,
            {"waiting_for": "readiness"},
            "traffic 40/60, capacity 100/60, waiting for the new replicas",
        ),
        (UPGRADING, {"paused": True, "next_step_at": NOW}, "traffic 40/60, capacity 100/60, paused"),
        (
            rayservice("UpgradeInProgress", "RollbackInProgress", traffic=(75, 25), capacity=(100, 50)),
            {"next_step_at": NOW - timedelta(seconds=1)},
            "rolling back: traffic 75/25, capacity 100/50, next step in 0 s",
        ),
        (UPGRADING, {}, "traffic 40/60, capacity 100/60"),
    ],
)
def test_upgrade_detail_line(status: RayService, kwargs: dict[str, object], expected: str) -> None:
    assert upgrade_detail_line(status.status, NOW, **kwargs) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("conditions", "incremental", "rejected"),
    [
        (("UpgradeInProgress",), False, True),  # blue-green: nothing to skip but readiness
        (("UpgradeInProgress",), True, False),  # incremental: promote skips intervals and steps
        ((), False, False),  # no upgrade: promote_upgrade rejects with its own message
        (("UpgradeInProgress", "RollbackInProgress"), False, False),  # promote_upgrade rejects a rollback
    ],
)
def test_new_cluster_promote_rejection(
    conditions: tuple[str, ...], incremental: bool, rejected: bool
) -> None:
    message = new_cluster_promote_rejection(rayservice(*conditions), incremental)
    assert (message is not None) is rejected
    if message is not None:
        assert message.startswith("promote rejected: RayService ns/svc upgrades with NewCluster (blue-green)")
