"""raypilot's manual upgrade controls (contract section 3: pause, resume, promote, abort) as pure state
changes, and the one-line upgrade progress shown in the Web UI.

KubeRay has no manual controls: an upgrade can only be steered by editing the spec (a reverted spec rolls
back). These transitions are raypilot's own; they feed the KubeRay decisions of `incremental` through its
`paused`, `promote` and `aborted_goal_hash` arguments:
- pause: traffic and capacity stay where they are (`paused=True`).
- resume: continue a paused upgrade.
- promote: finish now; intervals and step sizes are skipped, but capacity still comes before traffic. A
  NewCluster (blue-green) upgrade has nothing to skip: it switches all traffic at once as soon as the new
  cluster is ready, which stays required; `promote` is rejected there with a message saying so
  (`new_cluster_promote_rejection`, asked by the update's validator only, so runs that accepted it earlier
  replay unchanged).
- abort: roll back exactly as a reverted spec would (RollbackInProgress, reason UpgradeAborted); the aborted
  goal is remembered so the same spec does not start the upgrade again after the rollback completed.
Each is recorded in the raypilot condition `UpgradeControl` (visible in the status), and rejected with
`UpgradeControlRejected` (a clear message) when no upgrade is in progress.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from models.meta import ConditionStatus, is_condition_true
from models.rayservice import RayService, RayServiceConditionType, RayServiceStatuses
from workflows.decisions.rayservice.conditions import set_condition, with_condition, without_condition
from workflows.decisions.rayservice.upgrade.incremental import MESSAGE_UPGRADE_ABORTED, REASON_UPGRADE_ABORTED

__all__ = [
    "REASON_PAUSED_BY_CONTROL",
    "UPGRADE_CONTROL_CONDITION",
    "UpgradeControlRejected",
    "UpgradeControls",
    "abort_upgrade",
    "new_cluster_promote_rejection",
    "pause_upgrade",
    "promote_upgrade",
    "resume_upgrade",
    "settle_upgrade_controls",
    "upgrade_detail_line",
]

UPGRADE_CONTROL_CONDITION: Final = "UpgradeControl"
REASON_PAUSED_BY_CONTROL: Final = "Paused"  # the `pause` control's reason on that condition
Type = RayServiceConditionType


class UpgradeControlRejected(ValueError):
    """The control does not apply now; str(error) says why."""


@dataclass(frozen=True)
class UpgradeControls:
    """The controls in effect (part of the workflow state)."""

    paused: bool = False
    promote_requested: bool = False
    aborted_goal_hash: str | None = None


def _upgrading(status: RayServiceStatuses) -> bool:
    return is_condition_true(status.conditions, Type.UPGRADE_IN_PROGRESS)


def _rolling_back(status: RayServiceStatuses) -> bool:
    return is_condition_true(status.conditions, Type.ROLLBACK_IN_PROGRESS)


def _check_upgrading(control: str, rayservice: RayService) -> None:
    if not _upgrading(rayservice.status):
        name = f"{rayservice.metadata.namespace}/{rayservice.metadata.name}"
        raise UpgradeControlRejected(f"{control} rejected: no upgrade is in progress for RayService {name}")


def _record(
    status: RayServiceStatuses, value: ConditionStatus, reason: str, message: str, now: datetime
) -> RayServiceStatuses:
    return with_condition(status, UPGRADE_CONTROL_CONDITION, value, reason, message, now)


def pause_upgrade(
    controls: UpgradeControls, rayservice: RayService, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses]:
    _check_upgrading("pause", rayservice)
    if controls.paused:
        raise UpgradeControlRejected("pause rejected: the upgrade is already paused")
    message = "Upgrade paused by the pause control; traffic and capacity stay where they are."
    status = _record(rayservice.status, ConditionStatus.TRUE, REASON_PAUSED_BY_CONTROL, message, now)
    return dataclasses.replace(controls, paused=True), status


def resume_upgrade(
    controls: UpgradeControls, rayservice: RayService, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses]:
    _check_upgrading("resume", rayservice)
    if not controls.paused:
        raise UpgradeControlRejected("resume rejected: the upgrade is not paused")
    status = _record(
        rayservice.status, ConditionStatus.FALSE, "Resumed", "Upgrade resumed by the resume control.", now
    )
    return dataclasses.replace(controls, paused=False), status


def promote_upgrade(
    controls: UpgradeControls, rayservice: RayService, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses]:
    _check_upgrading("promote", rayservice)
    if _rolling_back(rayservice.status):
        raise UpgradeControlRejected("promote rejected: a rollback is in progress")
    message = (
        "Promote requested: all traffic and capacity move to the new cluster without waiting for intervals."
    )
    status = _record(rayservice.status, ConditionStatus.TRUE, "PromoteRequested", message, now)
    return dataclasses.replace(controls, paused=False, promote_requested=True), status


def new_cluster_promote_rejection(rayservice: RayService, incremental: bool) -> str | None:
    """Why `promote` does not apply to this upgrade, or None. A NewCluster upgrade waits for nothing but the
    new cluster's readiness (every Serve application RUNNING with its replicas), which promote must not
    skip: there is no interval or step left to skip, so saying "promoted" would be a lie."""
    if incremental or not _upgrading(rayservice.status) or _rolling_back(rayservice.status):
        return None  # promote_upgrade decides (and rejects with its own message when it does not apply)
    name = f"{rayservice.metadata.namespace}/{rayservice.metadata.name}"
    return (
        f"promote rejected: RayService {name} upgrades with NewCluster (blue-green), which has no intervals "
        "or steps to skip: all traffic moves to the new cluster at once as soon as its Serve applications "
        "are RUNNING with their replicas, and that readiness is still required. Use resume to continue a "
        "paused upgrade."
    )


def abort_upgrade(
    controls: UpgradeControls, rayservice: RayService, goal_hash: str, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses]:
    """Roll back to the active cluster; `goal_hash` is the hash of the spec being aborted."""
    _check_upgrading("abort", rayservice)
    if _rolling_back(rayservice.status):
        raise UpgradeControlRejected("abort rejected: a rollback is already in progress")
    status = _record(rayservice.status, ConditionStatus.TRUE, "AbortRequested", MESSAGE_UPGRADE_ABORTED, now)
    status.conditions = set_condition(
        status.conditions,
        Type.ROLLBACK_IN_PROGRESS,
        ConditionStatus.TRUE,
        REASON_UPGRADE_ABORTED,
        MESSAGE_UPGRADE_ABORTED,
        status.observed_generation,
        now,
    )
    return UpgradeControls(aborted_goal_hash=goal_hash), status


def settle_upgrade_controls(
    controls: UpgradeControls, status: RayServiceStatuses, goal_hash: str
) -> tuple[UpgradeControls, RayServiceStatuses]:
    """After each pass: once no upgrade is in progress, pause and promote end and the UpgradeControl condition
    goes; an aborted goal is forgotten as soon as the user applies a different spec."""
    aborted = controls.aborted_goal_hash if controls.aborted_goal_hash == goal_hash else None
    if _upgrading(status):
        return dataclasses.replace(controls, aborted_goal_hash=aborted), status
    return UpgradeControls(aborted_goal_hash=aborted), without_condition(status, UPGRADE_CONTROL_CONDITION)


_WAITING_TEXT: Final[dict[str, str]] = {
    "capacity": "waiting for target capacity",
    "readiness": "waiting for the new replicas",
    "paused": "paused",
}


def upgrade_detail_line(
    status: RayServiceStatuses,
    now: datetime,
    next_step_at: datetime | None = None,
    waiting_for: str = "",
    paused: bool = False,
) -> str:
    """e.g. "traffic 40/60, capacity 100/60, next step in 12 s" (active/pending each)."""
    active, pending = status.active_service_status, status.pending_service_status
    active_traffic = 100 if active.traffic_routed_percent is None else active.traffic_routed_percent
    pending_traffic = 0 if pending.traffic_routed_percent is None else pending.traffic_routed_percent
    active_capacity = 100 if active.target_capacity is None else active.target_capacity
    pending_capacity = 0 if pending.target_capacity is None else pending.target_capacity
    line = f"traffic {active_traffic}/{pending_traffic}, capacity {active_capacity}/{pending_capacity}"
    if _rolling_back(status):
        line = "rolling back: " + line
    if paused:
        return line + ", paused"
    if next_step_at is not None:
        seconds = max(0, math.ceil((next_step_at - now).total_seconds()))
        return f"{line}, next step in {seconds} s"
    if waiting_for in _WAITING_TEXT:
        return f"{line}, {_WAITING_TEXT[waiting_for]}"
    return line
