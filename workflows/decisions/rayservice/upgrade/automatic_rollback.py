"""What raypilot does once it judged an upgrade's new cluster failing on its own (issue #18): the progress
deadline or a step's deadline passed, a Serve application is unhealthy, the head Pod crash-loops. Each of
those modules keeps its own judgement; the outcome is the same for all and decided here.

`Abort` (of `onProgressDeadline` or `onUnhealthy`) rolls back as the `abort` control does
(RollbackInProgress with the judgement's reason; the spec is not tried again until a different one is
applied); `Degraded` / `Wait` only say so and keep waiting. Both record a Warning Event and the raypilot
condition `RolloutProgressing` (False, the judgement's reason).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from models.meta import ConditionStatus
from models.rayservice import RayServiceConditionType, RayServiceStatuses
from models.rollout import OnProgressDeadline, OnUnhealthy
from workflows.decisions.rayservice.conditions import RayServiceEvent, with_condition
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls

__all__ = [
    "ROLLOUT_PROGRESSING_CONDITION",
    "automatic_rollback_controls",
    "rollback_in_progress",
    "rollback_or_keep_waiting",
    "with_rollout_progressing",
]

ROLLOUT_PROGRESSING_CONDITION: Final = "RolloutProgressing"


def automatic_rollback_controls(goal_hash: str) -> UpgradeControls:
    """The controls of a rollback raypilot starts itself (deadline, unhealthy cluster, failed analysis): the
    goal is not tried again, and the rollback skips intervals and step sizes (`promote_requested` during a
    rollback: traffic goes back to the active cluster as fast as its capacity allows, capacity first)."""
    return UpgradeControls(aborted_goal_hash=goal_hash, promote_requested=True)


def with_rollout_progressing(
    status: RayServiceStatuses, value: ConditionStatus, reason: str, message: str, now: datetime
) -> RayServiceStatuses:
    """A copy of `status` with the raypilot condition RolloutProgressing set."""
    return with_condition(status, ROLLOUT_PROGRESSING_CONDITION, value, reason, message, now)


def rollback_in_progress(
    status: RayServiceStatuses, reason: str, message: str, now: datetime
) -> RayServiceStatuses:
    """A copy of `status` with RollbackInProgress True for `reason`: the condition that starts an automatic
    rollback."""
    return with_condition(
        status, RayServiceConditionType.ROLLBACK_IN_PROGRESS, ConditionStatus.TRUE, reason, message, now
    )


def rollback_or_keep_waiting(
    status: RayServiceStatuses,
    controls: UpgradeControls,
    setting: OnProgressDeadline | OnUnhealthy,
    reason: str,
    seen: str,
    goal_hash: str,
    now: datetime,
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    """The controls, status and Warning Event once `seen` (what was judged, e.g. "RayCluster x is
    unhealthy (...)") happened: a rollback when `setting` is Abort, otherwise only the condition and Event
    with the controls unchanged. The message names the setting and its value, so a user sees which one
    acted."""
    name = "onUnhealthy" if isinstance(setting, OnUnhealthy) else "onProgressDeadline"
    roll_back = setting in (OnProgressDeadline.ABORT, OnUnhealthy.ABORT)
    outcome = "rolling back to the active cluster" if roll_back else "the upgrade keeps waiting"
    message = f"{seen}; {outcome} ({name}: {setting.value})."
    result = with_rollout_progressing(status, ConditionStatus.FALSE, reason, message, now)
    event = RayServiceEvent("Warning", reason, message)
    if not roll_back:
        return controls, result, event
    return automatic_rollback_controls(goal_hash), rollback_in_progress(result, reason, message, now), event
