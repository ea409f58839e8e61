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

from models.meta import ConditionStatus, is_condition_true
from models.rayservice import AppStatus, RayServiceConditionType, RayServiceStatuses
from models.rollout import OnUnhealthy
from workflows.decisions.rayservice.conditions import RayServiceEvent, set_condition
from workflows.decisions.upgrade.controls import UpgradeControls
from workflows.decisions.upgrade.progress_deadline import (
    ROLLOUT_PROGRESSING_CONDITION,
    automatic_rollback_controls,
)

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
    wait = on_unhealthy == OnUnhealthy.WAIT
    message = seen + (
        "; the upgrade keeps waiting (onUnhealthy: Wait)."
        if wait
        else "; rolling back to the active cluster (onUnhealthy: Abort)."
    )
    result = status.model_copy(deep=True)
    generation = result.observed_generation
    result.conditions = set_condition(
        result.conditions,
        ROLLOUT_PROGRESSING_CONDITION,
        ConditionStatus.FALSE,
        REASON_NEW_CLUSTER_UNHEALTHY,
        message,
        generation,
        now,
    )
    event = RayServiceEvent("Warning", REASON_NEW_CLUSTER_UNHEALTHY, message)
    if wait:
        return controls, result, event
    result.conditions = set_condition(
        result.conditions,
        Type.ROLLBACK_IN_PROGRESS,
        ConditionStatus.TRUE,
        REASON_NEW_CLUSTER_UNHEALTHY,
        message,
        generation,
        now,
    )
    return automatic_rollback_controls(goal_hash), result, event
