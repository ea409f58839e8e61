"""The step plan of raypilot.io/rollout: the next action for each step (table), the traffic decision with a
plan's ceiling, and the pause control an indefinite pause sets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.rayservice import AppStatus, ClusterUpgradeOptions, RayServiceStatus, RayServiceStatuses
from models.rollout import Analysis, HttpProbe, RolloutStep, ServeStatusCheck
from workflows.decisions.rayservice.upgrade.analysis import AnalysisResult, analysis_result
from workflows.decisions.rayservice.upgrade.controls import UPGRADE_CONTROL_CONDITION, UpgradeControls
from workflows.decisions.rayservice.upgrade.incremental import TrafficMoment, traffic_step
from workflows.decisions.rayservice.upgrade.step_plan import (
    REASON_PAUSED_BY_PLAN,
    StepAction,
    StepProgress,
    next_step_action,
    paused_by_plan,
    step_plan_line,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PLAN = [
    RolloutStep(traffic=1),
    RolloutStep(pause="30s"),
    RolloutStep(traffic=5),
    RolloutStep(traffic=25, pause="indefinite"),
    RolloutStep(traffic=100),
]


def at(index: int, reached: int | None = None, pause_requested: bool = False) -> StepProgress:
    reached_at = None if reached is None else T0 + timedelta(seconds=reached)
    return StepProgress("new", index, reached_at, pause_requested)


@pytest.mark.parametrize(
    ("progress", "weight", "paused", "now", "expected"),
    [
        # step 1 {traffic: 1}: move traffic until the new cluster has 1 %
        (StepProgress(), 0, False, 0, StepAction(at(0), 1, "traffic")),
        # reached: step 2 {pause: 30s} starts its clock now
        (at(0), 1, False, 0, StepAction(at(1, 0), 1, "pause", wake_at=T0 + timedelta(seconds=30))),
        (at(1, 0), 1, False, 29, StepAction(at(1, 0), 1, "pause", wake_at=T0 + timedelta(seconds=30))),
        # the pause is over: step 3 {traffic: 5}
        (at(1, 0), 1, False, 30, StepAction(at(2), 5, "traffic")),
        # traffic reached 5: step 4 moves to 25, then pauses indefinitely (sets the pause control once)
        (at(2), 5, False, 40, StepAction(at(3), 25, "traffic")),
        (at(3), 25, False, 50, StepAction(at(3, pause_requested=True), 25, "resume", pause_now=True)),
        (at(3, pause_requested=True), 25, True, 9999, StepAction(at(3, pause_requested=True), 25, "resume")),
        # resumed: step 5 {traffic: 100}
        (at(3, pause_requested=True), 25, False, 10000, StepAction(at(4), 100, "traffic")),
        (at(4), 100, False, 10001, StepAction(at(5), 100, "complete")),
        # several steps done at once (traffic already beyond them) are walked in one decision
        (StepProgress(), 5, False, 0, StepAction(at(1, 0), 1, "pause", wake_at=T0 + timedelta(seconds=30))),
        # a manual pause during a timed pause does not stop its clock; traffic is frozen by the control
        (at(1, 0), 1, True, 31, StepAction(at(2), 5, "traffic")),
        # another pending cluster (a new upgrade) starts the plan again
        (StepProgress("old", 4), 0, False, 0, StepAction(at(0), 1, "traffic")),
    ],
)
def test_next_action_for_each_step(
    progress: StepProgress, weight: int, paused: bool, now: int, expected: StepAction
) -> None:
    assert next_step_action(PLAN, progress, "new", weight, paused, T0 + timedelta(seconds=now)) == expected


def test_an_empty_plan_is_complete_at_once() -> None:
    assert next_step_action([], StepProgress(), "new", 0, False, T0).waiting_for == "complete"


def test_the_condition_message_says_the_step() -> None:
    assert step_plan_line(StepAction(at(1, 0), 1, "pause"), 5) == "step 2 of 5: pausing (traffic up to 1 %)"
    assert (
        step_plan_line(StepAction(at(5), 100, "complete"), 5)
        == "all 5 steps done: the rest of the traffic moves"
    )


OPTIONS = ClusterUpgradeOptions(
    max_surge_percent=50, step_size_percent=10, interval_seconds=60, gateway_class_name="istio"
)


def upgrade_status(
    pending_weight: int, pending_capacity: int, moved_at: datetime | None = None
) -> RayServiceStatuses:
    return RayServiceStatuses(
        active_service_status=RayServiceStatus(
            ray_cluster_name="old", traffic_routed_percent=100 - pending_weight, target_capacity=100
        ),
        pending_service_status=RayServiceStatus(
            ray_cluster_name="new",
            traffic_routed_percent=pending_weight,
            target_capacity=pending_capacity,
            last_traffic_migrated_time=moved_at,
        ),
    )


@pytest.mark.parametrize(
    ("weight", "capacity", "target", "ready", "expected"),
    [
        (0, 50, 1, True, (99, 1, True, "step")),  # straight to the plan's 1 %, no stepSizePercent
        (1, 50, 1, True, (99, 1, False, "step")),  # at the ceiling: wait for the plan
        (1, 50, 5, True, (95, 5, True, "step")),  # no intervalSeconds since the last move
        (5, 50, 100, True, (50, 50, True, "capacity")),  # capped by the pending capacity
        (5, 50, 25, False, (95, 5, False, "readiness")),  # only to a ready cluster
        (50, 50, 100, True, (50, 50, False, "capacity")),  # capacity must grow first (KubeRay's order)
    ],
)
def test_traffic_with_a_plan_ceiling(
    weight: int, capacity: int, target: int, ready: bool, expected: tuple[int, int, bool, str]
) -> None:
    moment = TrafficMoment(OPTIONS, T0, pending_ready=ready, plan_target=target)
    step = traffic_step(upgrade_status(weight, capacity, moved_at=T0), moment)
    assert (step.active_weight, step.pending_weight, step.moved, step.waiting_for) == expected
    assert step.next_step_at is None  # the plan's pauses are the timers, not intervalSeconds


def test_without_a_plan_the_kuberay_step_and_interval_stay() -> None:
    step = traffic_step(upgrade_status(0, 50, moved_at=T0), TrafficMoment(OPTIONS, T0, pending_ready=True))
    assert (step.pending_weight, step.moved, step.next_step_at) == (0, False, T0 + timedelta(seconds=60))


def test_promote_overrides_the_plan() -> None:
    moment = TrafficMoment(OPTIONS, T0, pending_ready=True, promote=True, plan_target=1)
    assert traffic_step(upgrade_status(0, 50), moment).pending_weight == 50


def test_an_indefinite_pause_sets_the_pause_control_saying_which_step() -> None:
    from raypilot.testing.rayservice_scenarios import incremental_manifest
    from workflows.decisions.rayservice.manifest import rayservice_at

    rayservice = rayservice_at(incremental_manifest(), 1, upgrade_status(25, 50))
    controls, status = paused_by_plan(UpgradeControls(), rayservice, 4, T0)
    assert controls.paused
    condition = next(c for c in status.conditions if c.type == UPGRADE_CONTROL_CONDITION)
    assert condition.reason == REASON_PAUSED_BY_PLAN
    assert condition.message.startswith("Upgrade paused by step 4 of raypilot.io/rollout")
    assert paused_by_plan(controls, rayservice, 4, T0) == (controls, rayservice.status)


GATE = [RolloutStep(traffic=10), RolloutStep(analysis="smoke", pause="1m"), RolloutStep(traffic=50)]


def result(verdict: str) -> dict[str, AnalysisResult]:
    return {"smoke": AnalysisResult("smoke", verdict, "app=X")}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("verdict", "waiting_for", "index"),
    [("pending", "analysis", 1), ("fail", "failed", 1), ("pass", "pause", 1), ("skipped", "pause", 1)],
)
def test_an_analysis_step_waits_fails_or_goes_on_to_its_pause(
    verdict: str, waiting_for: str, index: int
) -> None:
    action = next_step_action(GATE, at(1), "new", 10, False, T0, result(verdict))
    assert (action.waiting_for, action.progress.index, action.analysis) == (waiting_for, index, "smoke")


def test_serve_status_verdicts() -> None:
    gate = Analysis(name="smoke", serve_status=ServeStatusCheck())
    only_a = Analysis(name="a-only", serve_status=ServeStatusCheck(applications=["a"]))
    running, failed, deploying = (AppStatus(status=s) for s in ("RUNNING", "DEPLOY_FAILED", "DEPLOYING"))
    assert analysis_result(gate, {"a": running, "b": running}).verdict == "pass"
    assert analysis_result(gate, {"a": running, "b": failed}) == AnalysisResult(
        "smoke", "fail", "a=RUNNING, b=DEPLOY_FAILED"
    )
    assert analysis_result(gate, {"a": deploying}).verdict == "pending"
    assert analysis_result(gate, {}).verdict == "pending"
    assert analysis_result(only_a, {"a": running, "b": failed}).verdict == "pass"
    assert analysis_result(only_a, {}).values == "a=NOT_REPORTED"
    probe = Analysis(name="p", http=HttpProbe())
    assert analysis_result(probe, {}) == AnalysisResult("p", "skipped", "the http provider is not run yet")
