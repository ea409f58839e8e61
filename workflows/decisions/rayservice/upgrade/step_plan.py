"""The step plan of `raypilot.io/rollout` (issue #18): which step of the plan an incremental upgrade is at,
and what that step asks for now. raypilot's own; KubeRay has only stepSizePercent/intervalSeconds.

A step is `{traffic}`, `{pause}` or both (traffic first, then the pause). The plan gives the traffic
decision (incremental.traffic_step) a ceiling, `traffic_target`: the pending cluster's weight may grow to it,
as fast as its capacity allows. A step is done when the pending weight reached its traffic and its pause is
over: a timed pause is measured from the moment the traffic was reached (a durable timer at `wake_at`); an
indefinite pause asks the workflow to set the `pause` control once (`pause_now`) and is over when the
control was lifted (`resume`, or `promote`, which also skips the rest of the plan). After the last step
the ceiling is 100. An analysis step (analysis.py) waits for its verdict: pass goes on, fail rolls back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from models.meta import ConditionStatus
from models.rayservice import RayService, RayServiceStatuses
from models.rollout import RolloutStep, pause_seconds
from workflows.decisions.rayservice.conditions import with_condition, without_condition
from workflows.decisions.rayservice.upgrade.analysis import AnalysisResult
from workflows.decisions.rayservice.upgrade.controls import UPGRADE_CONTROL_CONDITION, UpgradeControls

__all__ = [
    "FULL_TRAFFIC",
    "REASON_PAUSED_BY_PLAN",
    "ROLLOUT_STEP_CONDITION",
    "StepAction",
    "StepProgress",
    "next_step_action",
    "paused_by_plan",
    "step_plan_line",
    "with_step_condition",
]

ROLLOUT_STEP_CONDITION: Final = "RolloutStep"
REASON_PAUSED_BY_PLAN: Final = "PausedByStepPlan"

FULL_TRAFFIC: Final = 100


@dataclass(frozen=True)
class StepProgress:
    """Where an upgrade is in its plan (workflow state). `cluster` is the pending cluster the progress
    belongs to: a new pending cluster starts the plan from its first step."""

    cluster: str = ""
    index: int = 0
    reached_at: datetime | None = None  # when the step's traffic was reached (its pause starts then)
    pause_requested: bool = False  # an indefinite pause set the pause control


@dataclass(frozen=True)
class StepAction:
    """What the current step asks for now."""

    progress: StepProgress
    traffic_target: int  # the pending weight the plan allows now
    waiting_for: Literal["traffic", "pause", "resume", "analysis", "failed", "complete"]
    wake_at: datetime | None = None  # a timed pause ends then
    pause_now: bool = False  # an indefinite pause was just reached: set the pause control
    analysis: str = ""  # the analysis judged last ("failed": the gate that failed)


def _target_up_to(steps: list[RolloutStep], index: int) -> int:
    """The newest traffic value of steps[0..index], 0 before any."""
    return next((s.traffic for s in reversed(steps[: index + 1]) if s.traffic is not None), 0)


def next_step_action(
    steps: list[RolloutStep],
    progress: StepProgress,
    pending_cluster: str,
    pending_weight: int,
    paused: bool,
    now: datetime,
    analyses: Mapping[str, AnalysisResult] | None = None,
) -> StepAction:
    """The current step's ask, advancing over every step that is already done (pure, total).

    `pending_weight` is the pending cluster's traffic as routed now; `paused` the pause control; `analyses`
    the current result of each analysis by name. Within a step: traffic, then the analysis, then the pause.
    """
    if progress.cluster != pending_cluster:
        progress = StepProgress(cluster=pending_cluster)
    judged = ""
    while progress.index < len(steps):
        step = steps[progress.index]
        target = _target_up_to(steps, progress.index)
        if step.traffic is not None and pending_weight < step.traffic:
            return StepAction(progress, target, "traffic", analysis=judged)
        if step.analysis is not None:
            judged = step.analysis
            result = (analyses or {}).get(step.analysis)
            if result is None or result.verdict == "pending":
                return StepAction(progress, target, "analysis", analysis=judged)
            if result.verdict == "fail":
                return StepAction(progress, target, "failed", analysis=judged)
        if step.pause is not None:
            seconds = pause_seconds(step.pause)
            if seconds is None:  # indefinite: pause once, then wait for the control to be lifted
                if not progress.pause_requested:
                    progress = dataclasses.replace(progress, pause_requested=True)
                    return StepAction(progress, target, "resume", pause_now=True, analysis=judged)
                if paused:
                    return StepAction(progress, target, "resume", analysis=judged)
            else:
                reached = progress.reached_at if progress.reached_at is not None else now
                progress = dataclasses.replace(progress, reached_at=reached)
                ends = reached + timedelta(seconds=seconds)
                if now < ends:
                    return StepAction(progress, target, "pause", wake_at=ends, analysis=judged)
        progress = StepProgress(cluster=pending_cluster, index=progress.index + 1)
    return StepAction(progress, FULL_TRAFFIC, "complete", analysis=judged)


_WAITING_TEXT: Final = {
    "traffic": "moving traffic",
    "pause": "pausing",
    "resume": "paused until resume or promote",
    "analysis": "running an analysis",
    "failed": "an analysis failed",
    "complete": "plan complete",
}


def step_plan_line(action: StepAction, steps: int, mirror: int = 0) -> str:
    """The RolloutStep condition's message, e.g. "step 2 of 5: pausing (traffic up to 5 %)", with the
    mirror when one is on ("..., mirroring 10 %")."""
    if action.waiting_for == "complete":
        return f"all {steps} steps done: the rest of the traffic moves"
    number = action.progress.index + 1
    doing = _WAITING_TEXT[action.waiting_for]
    mirroring = f", mirroring {mirror} %" if mirror > 0 else ""
    return f"step {number} of {steps}: {doing} (traffic up to {action.traffic_target} %{mirroring})"


def paused_by_plan(
    controls: UpgradeControls, rayservice: RayService, step_number: int, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses]:
    """An indefinite pause sets the pause control, as `raypilot upgrade pause` would (so `resume` lifts it),
    saying which step paused; unchanged when the upgrade is paused already."""
    if controls.paused:
        return controls, rayservice.status
    message = (
        f"Upgrade paused by step {step_number} of raypilot.io/rollout (an indefinite pause); "
        "resume continues the plan, promote finishes the upgrade."
    )
    status = with_condition(
        rayservice.status,
        UPGRADE_CONTROL_CONDITION,
        ConditionStatus.TRUE,
        REASON_PAUSED_BY_PLAN,
        message,
        now,
    )
    return dataclasses.replace(controls, paused=True), status


def with_step_condition(
    status: RayServiceStatuses, action: StepAction | None, steps: int, now: datetime, mirror: int = 0
) -> RayServiceStatuses:
    """The raypilot condition RolloutStep (True while a plan is walked, its message the step and the mirror
    in effect), or gone when no plan is walked."""
    if action is None:
        if not any(condition.type == ROLLOUT_STEP_CONDITION for condition in status.conditions):
            return status
        return without_condition(status, ROLLOUT_STEP_CONDITION)
    reason = "StepPlanComplete" if action.waiting_for == "complete" else "WalkingStepPlan"
    return with_condition(
        status,
        ROLLOUT_STEP_CONDITION,
        ConditionStatus.TRUE,
        reason,
        step_plan_line(action, steps, mirror),
        now,
    )
