"""Per-step deadlines of a `raypilot.io/rollout` step plan (issue #18): `steps[].progressDeadlineSeconds`,
how long one step may take to reach its traffic and its analysis' verdict. raypilot's own.

The step's clock starts when the plan reaches the step (for this pending cluster) and counts only while the
step waits for traffic or an analysis: a pause, timed or indefinite, is the plan's own waiting and is never
late. Past the deadline `onProgressDeadline` applies as for the new cluster's deadline: `Abort` rolls back
as `abort` does (RollbackInProgress, reason StepDeadlineExceeded), `Degraded` only says so and keeps
waiting; both record a Warning Event and the condition RolloutProgressing (False, StepDeadlineExceeded).
Once per cluster and step.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from models.rayservice import RayServiceStatuses
from models.rollout import OnProgressDeadline, RolloutStep
from workflows.decisions.rayservice.conditions import RayServiceEvent
from workflows.decisions.rayservice.upgrade.automatic_rollback import rollback_or_keep_waiting
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
from workflows.decisions.rayservice.upgrade.progress_deadline import DeadlineVerdict

__all__ = [
    "REASON_STEP_DEADLINE_EXCEEDED",
    "StepClock",
    "step_clock",
    "step_deadline_exceeded",
    "step_deadline_verdict",
]

REASON_STEP_DEADLINE_EXCEEDED: Final = "StepDeadlineExceeded"
_LATE_WHILE: Final = ("traffic", "analysis")


@dataclass(frozen=True)
class StepClock:
    """When the plan reached step `index` for `cluster` (workflow state)."""

    cluster: str
    index: int
    started_at: datetime

    @property
    def key(self) -> str:
        return f"{self.cluster}/step {self.index + 1}"


def step_clock(clock: StepClock | None, cluster: str, index: int, now: datetime) -> StepClock:
    """The clock of the step the plan is at: kept while the cluster and step stay, started anew otherwise."""
    if clock is not None and clock.cluster == cluster and clock.index == index:
        return clock
    return StepClock(cluster, index, now)


def step_deadline_verdict(
    step: RolloutStep, clock: StepClock, waiting_for: str, settled: str, now: datetime
) -> DeadlineVerdict:
    """`none` (no deadline, a pause, or this step acted on already), `wait` until `due_at`, or `exceeded`."""
    seconds = step.progress_deadline_seconds
    if seconds is None or waiting_for not in _LATE_WHILE or settled == clock.key:
        return DeadlineVerdict("none")
    due = clock.started_at + timedelta(seconds=seconds)
    return DeadlineVerdict("wait", due) if now < due else DeadlineVerdict("exceeded")


def step_deadline_exceeded(
    status: RayServiceStatuses,
    controls: UpgradeControls,
    on_deadline: OnProgressDeadline,
    clock: StepClock,
    seconds: int,
    waiting_for: str,
    goal_hash: str,
    now: datetime,
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    what = "its traffic" if waiting_for == "traffic" else "its analysis' verdict"
    step = f"Step {clock.index + 1} of raypilot.io/rollout on RayCluster {clock.cluster}"
    seen = f"{step} did not reach {what} in {seconds} s"
    return rollback_or_keep_waiting(
        status, controls, on_deadline, REASON_STEP_DEADLINE_EXCEEDED, seen, goal_hash, now
    )
