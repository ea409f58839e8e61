"""Automatic rollback of an upgrade whose new cluster is unhealthy (`raypilot.io/rollout` onUnhealthy, issue
#18). raypilot's own: KubeRay keeps waiting for a pending cluster whose Serve applications failed.

A Serve application of the pending cluster in DEPLOY_FAILED or UNHEALTHY makes the new cluster unhealthy.
`Abort` (the default once the annotation is given) rolls back as the `abort` control does (RollbackInProgress,
reason NewClusterUnhealthy; the spec is not tried again until a different one is applied); `Wait` only says
so and keeps waiting (Serve may still recover). Both record a Warning Event NewClusterUnhealthy naming the
applications and their messages, and the raypilot condition RolloutProgressing (False, NewClusterUnhealthy).
Once per pending cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

from models.meta import is_condition_true
from models.rayservice import AppStatus, RayServiceConditionType, RayServiceStatuses
from models.rollout import OnUnhealthy
from workflows.decisions.rayservice.conditions import RayServiceEvent
from workflows.decisions.rayservice.upgrade.automatic_rollback import rollback_or_keep_waiting
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls

__all__ = [
    "REASON_NEW_CLUSTER_UNHEALTHY",
    "UNHEALTHY_APP_STATUSES",
    "unhealthy_applications",
    "unhealthy_upgrade",
]

REASON_NEW_CLUSTER_UNHEALTHY: Final = "NewClusterUnhealthy"
UNHEALTHY_APP_STATUSES: Final = ("DEPLOY_FAILED", "UNHEALTHY")
Type = RayServiceConditionType


def unhealthy_applications(
    status: RayServiceStatuses, applications: Mapping[str, AppStatus] | None, settled_cluster: str
) -> dict[str, str]:
    """The pending cluster's unhealthy applications ("STATUS: message" by name) while an upgrade goes on and
    this cluster was not acted on yet; empty otherwise."""
    pending = status.pending_service_status.ray_cluster_name
    if (
        not applications
        or not pending
        or pending == settled_cluster
        or not is_condition_true(status.conditions, Type.UPGRADE_IN_PROGRESS)
        or is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS)
    ):
        return {}
    return {
        name: f"{app.status}: {app.message}" if app.message else app.status
        for name, app in sorted(applications.items())
        if app.status in UNHEALTHY_APP_STATUSES
    }


def unhealthy_upgrade(
    status: RayServiceStatuses,
    controls: UpgradeControls,
    on_unhealthy: OnUnhealthy,
    unhealthy: Mapping[str, str],
    goal_hash: str,
    now: datetime,
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    """The status, controls and Warning Event for an unhealthy new cluster: a rollback (Abort) or only the
    condition (Wait)."""
    cluster = status.pending_service_status.ray_cluster_name
    apps = "; ".join(f"{name} {state}" for name, state in unhealthy.items())
    seen = f"RayCluster {cluster} is unhealthy (Serve applications: {apps})"
    return rollback_or_keep_waiting(
        status, controls, on_unhealthy, REASON_NEW_CLUSTER_UNHEALTHY, seen, goal_hash, now
    )
