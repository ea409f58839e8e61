"""Per-step deadlines and the head Pod crash loop (decisions/rayservice/upgrade/step_deadline.py,
crash_loop.py), by table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.rayservice import RayServiceStatuses
from models.rollout import OnProgressDeadline, OnUnhealthy, RolloutStep
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
from workflows.decisions.rayservice.upgrade.crash_loop import head_crash_loop, head_crash_loop_upgrade
from workflows.decisions.rayservice.upgrade.step_deadline import (
    StepClock,
    step_clock,
    step_deadline_exceeded,
    step_deadline_verdict,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CLOCK = StepClock("rc", 1, NOW - timedelta(seconds=30))
# The same step, started at the deadline (60 s ago) and far past it.
AT_DEADLINE = StepClock("rc", 1, NOW - timedelta(seconds=60))
LONG_AGO = StepClock("rc", 1, NOW - timedelta(seconds=600))
TIMED = RolloutStep.model_validate({"traffic": 10, "progressDeadlineSeconds": 60})


def test_the_step_clock_starts_anew_for_another_step_or_cluster() -> None:
    assert step_clock(CLOCK, "rc", 1, NOW) is CLOCK
    assert step_clock(CLOCK, "rc", 2, NOW) == StepClock("rc", 2, NOW)
    assert step_clock(CLOCK, "other", 1, NOW) == StepClock("other", 1, NOW)
    assert step_clock(None, "rc", 0, NOW) == StepClock("rc", 0, NOW)


@pytest.mark.parametrize(
    ("step", "clock", "waiting_for", "settled", "verdict", "due"),
    [
        (TIMED, CLOCK, "traffic", "", "wait", NOW + timedelta(seconds=30)),
        (TIMED, CLOCK, "analysis", "", "wait", NOW + timedelta(seconds=30)),
        (TIMED, AT_DEADLINE, "traffic", "", "exceeded", None),
        (TIMED, LONG_AGO, "pause", "", "none", None),  # pauses are never late
        (TIMED, LONG_AGO, "resume", "", "none", None),
        (TIMED, LONG_AGO, "traffic", "rc/step 2", "none", None),  # acted on
        (RolloutStep(traffic=10), CLOCK, "traffic", "", "none", None),  # no deadline
    ],
)
def test_step_deadline_verdict(
    step: RolloutStep, clock: StepClock, waiting_for: str, settled: str, verdict: str, due: datetime | None
) -> None:
    found = step_deadline_verdict(step, clock, waiting_for, settled, NOW)
    assert (found.verdict, found.due_at) == (verdict, due)


@pytest.mark.parametrize(
    ("on_deadline", "rolls_back"), [(OnProgressDeadline.ABORT, True), (OnProgressDeadline.DEGRADED, False)]
)
def test_step_deadline_exceeded(on_deadline: OnProgressDeadline, rolls_back: bool) -> None:
    controls, status, event = step_deadline_exceeded(
        RayServiceStatuses(), UpgradeControls(), on_deadline, CLOCK, 60, "traffic", "goal", NOW
    )
    types = {c.type: c.reason for c in status.conditions}
    assert types["RolloutProgressing"] == "StepDeadlineExceeded"
    assert ("RollbackInProgress" in types) is rolls_back
    assert (controls.aborted_goal_hash == "goal") is rolls_back
    assert event.type == "Warning"
    assert event.message.startswith(
        "Step 2 of raypilot.io/rollout on RayCluster rc did not reach its traffic in 60 s"
    )


def pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"status": {"containerStatuses": list(containers)}}


@pytest.mark.parametrize(
    ("head", "seen"),
    [
        (None, ""),
        (pod(), ""),
        (pod({"name": "ray-head", "restartCount": 0, "state": {"running": {}}}), ""),
        (pod({"name": "ray-head", "restartCount": 2, "state": {"running": {}}}), ""),  # a restart or two
        (pod({"name": "ray-head", "restartCount": 3, "state": {"running": {}}}), "ray-head: 3 restarts"),
        (
            pod(
                {"name": "ray-head", "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ),
            "ray-head: CrashLoopBackOff, 1 restarts",
        ),
        (
            pod(
                {"name": "ray-head", "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
            ),
            "",
        ),
        (
            pod(
                {"name": "ray-head", "restartCount": 0, "state": {"running": {}}},
                {"name": "sidecar", "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            ),
            "sidecar: CrashLoopBackOff, 5 restarts",
        ),
    ],
)
def test_head_crash_loop(head: dict[str, Any] | None, seen: str) -> None:
    assert head_crash_loop(head) == seen


@pytest.mark.parametrize(
    ("on_unhealthy", "rolls_back"), [(OnUnhealthy.ABORT, True), (OnUnhealthy.WAIT, False)]
)
def test_head_crash_loop_upgrade(on_unhealthy: OnUnhealthy, rolls_back: bool) -> None:
    controls, status, event = head_crash_loop_upgrade(
        RayServiceStatuses(), UpgradeControls(), on_unhealthy, "ray-head: 3 restarts", "goal", NOW
    )
    reasons = {c.type: c.reason for c in status.conditions}
    assert reasons["RolloutProgressing"] == "HeadPodCrashLoop"
    assert ("RollbackInProgress" in reasons) is rolls_back
    assert (controls != UpgradeControls()) is rolls_back
    assert (event.type, event.reason) == ("Warning", "HeadPodCrashLoop")
