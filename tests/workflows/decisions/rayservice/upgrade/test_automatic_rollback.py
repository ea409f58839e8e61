"""What an automatic rollback does once a new cluster was judged failing (table): each value of
onProgressDeadline and onUnhealthy, the conditions, the Event and the controls."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.meta import ConditionStatus
from models.rayservice import RayServiceStatus, RayServiceStatuses
from models.rollout import OnProgressDeadline, OnUnhealthy
from workflows.decisions.rayservice.upgrade.automatic_rollback import rollback_or_keep_waiting
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PAUSED = UpgradeControls(paused=True)
ROLLED_BACK = UpgradeControls(aborted_goal_hash="goal", promote_requested=True)
ROLLING_BACK = "; rolling back to the active cluster"
KEEPS_WAITING = "; the upgrade keeps waiting"


@pytest.mark.parametrize(
    ("setting", "controls", "suffix"),
    [
        (OnProgressDeadline.ABORT, ROLLED_BACK, f"{ROLLING_BACK} (onProgressDeadline: Abort)."),
        (OnProgressDeadline.DEGRADED, PAUSED, f"{KEEPS_WAITING} (onProgressDeadline: Degraded)."),
        (OnUnhealthy.ABORT, ROLLED_BACK, f"{ROLLING_BACK} (onUnhealthy: Abort)."),
        (OnUnhealthy.WAIT, PAUSED, f"{KEEPS_WAITING} (onUnhealthy: Wait)."),
    ],
)
def test_rollback_or_keep_waiting(
    setting: OnProgressDeadline | OnUnhealthy, controls: UpgradeControls, suffix: str
) -> None:
    status = RayServiceStatuses(
        pending_service_status=RayServiceStatus(ray_cluster_name="new"), observed_generation=3
    )
    found_controls, found, event = rollback_or_keep_waiting(
        status, PAUSED, setting, "SomethingFailed", "RayCluster new failed", "goal", NOW
    )
    message = f"RayCluster new failed{suffix}"
    conditions = {c.type: (c.status, c.reason, c.message, c.observed_generation) for c in found.conditions}
    rollback = {"RollbackInProgress": (ConditionStatus.TRUE, "SomethingFailed", message, 3)}
    assert conditions == {
        "RolloutProgressing": (ConditionStatus.FALSE, "SomethingFailed", message, 3),
        **(rollback if controls == ROLLED_BACK else {}),
    }
    assert found_controls == controls
    assert (event.type, event.reason, event.message) == ("Warning", "SomethingFailed", message)
    assert status.conditions == []  # the status given is left as it was
