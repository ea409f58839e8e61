"""`retry` (issue #18, Argo Rollouts' verb): start an aborted upgrade of the same spec again.

After `abort` (or raypilot's own rollback: an unhealthy new cluster, a progress deadline, a failed gate) the
aborted spec's RayCluster hash is remembered so that the same spec does not start the upgrade again
(controls.py). `retry` forgets it: the next pass prepares a new pending cluster for the spec, as a first
attempt would, and the newest revision is Progressing again. Rejected, with the reason, while a rollback
still runs, while an upgrade is in progress, or when the desired spec was not aborted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from models.meta import is_condition_true
from models.rayservice import RayServiceConditionType, RayServiceStatuses
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
from workflows.decisions.rayservice.upgrade.revisions import Revision, RevisionOutcome

__all__ = ["retried_controls", "retried_revisions", "retry_rejection"]

Type = RayServiceConditionType


def retry_rejection(
    controls: UpgradeControls, status: RayServiceStatuses, goal_hash: str, name: str
) -> str | None:
    """Why `retry` does not apply now (`name` is NAMESPACE/NAME), or None."""
    if is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS):
        return f"retry rejected: RayService {name} is still rolling back; retry once the rollback completed"
    if is_condition_true(status.conditions, Type.UPGRADE_IN_PROGRESS):
        return f"retry rejected: an upgrade of RayService {name} is in progress"
    if controls.aborted_goal_hash is None or controls.aborted_goal_hash != goal_hash:
        return f"retry rejected: no aborted upgrade of the current spec of RayService {name} to retry"
    return None


def retried_controls(controls: UpgradeControls) -> UpgradeControls:
    return dataclasses.replace(controls, aborted_goal_hash=None)


def retried_revisions(history: Sequence[Revision]) -> list[Revision]:
    """The newest revision, aborted or rolled back, is Progressing again."""
    revisions = list(history)
    settled = (RevisionOutcome.ABORTED, RevisionOutcome.ROLLED_BACK)
    if revisions and revisions[-1].outcome in settled:
        revisions[-1] = dataclasses.replace(
            revisions[-1], outcome=RevisionOutcome.PROGRESSING.value, settled=None, reason=""
        )
    return revisions
