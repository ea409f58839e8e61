"""onUnhealthy of raypilot.io/rollout: which applications make a new cluster unhealthy (table), and what
Abort and Wait do."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.meta import ConditionStatus, is_condition_true
from models.rayservice import AppStatus, RayServiceConditionType, RayServiceStatus, RayServiceStatuses
from models.rollout import OnUnhealthy
from workflows.decisions.rayservice.conditions import set_condition
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
from workflows.decisions.rayservice.upgrade.unhealthy import unhealthy_applications, unhealthy_upgrade

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Type = RayServiceConditionType


def upgrading(rolling_back: bool = False, pending: str = "new") -> RayServiceStatuses:
    status = RayServiceStatuses(
        active_service_status=RayServiceStatus(ray_cluster_name="old"),
        pending_service_status=RayServiceStatus(ray_cluster_name=pending),
    )
    status.conditions = set_condition(
        status.conditions, Type.UPGRADE_IN_PROGRESS, ConditionStatus.TRUE, "r", "m", 1, T0
    )
    if rolling_back:
        status.conditions = set_condition(
            status.conditions, Type.ROLLBACK_IN_PROGRESS, ConditionStatus.TRUE, "r", "m", 1, T0
        )
    return status


FAILED = AppStatus(status="DEPLOY_FAILED", message="import error")
RUNNING = AppStatus(status="RUNNING")


@pytest.mark.parametrize(
    ("status", "apps", "settled", "expected"),
    [
        (upgrading(), {"a": RUNNING, "b": FAILED}, "", {"b": "DEPLOY_FAILED: import error"}),
        (upgrading(), {"a": AppStatus(status="UNHEALTHY")}, "", {"a": "UNHEALTHY"}),
        (upgrading(), {"a": AppStatus(status="DEPLOYING")}, "", {}),  # not yet: the deadline covers it
        (upgrading(), {"b": FAILED}, "new", {}),  # acted on once
        (upgrading(rolling_back=True), {"b": FAILED}, "", {}),
        (upgrading(pending=""), {"b": FAILED}, "", {}),
        (upgrading(), None, "", {}),
    ],
)
def test_unhealthy_applications(
    status: RayServiceStatuses, apps: dict[str, AppStatus] | None, settled: str, expected: dict[str, str]
) -> None:
    assert unhealthy_applications(status, apps, settled) == expected


def test_abort_rolls_back_and_wait_only_says_so() -> None:
    unhealthy = {"b": "DEPLOY_FAILED: import error"}
    controls, status, event = unhealthy_upgrade(
        upgrading(), UpgradeControls(), OnUnhealthy.ABORT, unhealthy, "h", T0
    )
    assert controls == UpgradeControls(aborted_goal_hash="h", promote_requested=True)  # back at once
    assert is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS)
    assert event.message == (
        "RayCluster new is unhealthy (Serve applications: b DEPLOY_FAILED: import error); "
        "rolling back to the active cluster (onUnhealthy: Abort)."
    )
    controls, status, event = unhealthy_upgrade(
        upgrading(), UpgradeControls(), OnUnhealthy.WAIT, unhealthy, "h", T0
    )
    assert controls == UpgradeControls()
    assert not is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS)
    assert (event.type, event.reason) == ("Warning", "NewClusterUnhealthy")
