"""`spec.suspend` on a RayService: the atomic Suspending -> Suspended state machine and resuming.

KubeRay counterparts (rayservice_controller.go): handleSuspend, suspendIsOperative,
deleteRayServiceOwnedResources (which objects go). The machine is
    (serving) --suspend=true--> Suspending --owned objects gone--> Suspended --suspend=false--> (initializing)
Once Suspending is recorded the deletion always completes, even if `spec.suspend` flips back meanwhile.

Where raypilot differs: KubeRay persists Suspending before deleting anything and re-polls every 2 s; the
workflow keeps the same order (record Suspending, then delete, then wait for the objects to disappear) but
waits on events.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Final

from models.meta import ConditionStatus, is_condition_true
from models.rayservice import (
    RayServiceConditionReason,
    RayServiceConditionType,
    RayServiceStatus,
    RayServiceStatuses,
)
from workflows.decisions.rayservice.conditions import remove_condition, set_condition

__all__ = [
    "SuspendAction",
    "begin_suspending",
    "complete_suspend",
    "is_suspend_operative",
    "resume_from_suspend",
    "suspend_action",
    "suspending_in_progress",
]

Type = RayServiceConditionType
Reason = RayServiceConditionReason
_FALSE: Final = ConditionStatus.FALSE
_TRUE: Final = ConditionStatus.TRUE


class SuspendAction(Enum):
    """What handleSuspend does on this pass."""

    NONE = "none"  # not suspending: reconcile normally
    BEGIN = "begin"  # record Suspending (begin_suspending); delete nothing yet
    DELETE_OWNED = "delete-owned"  # Suspending recorded: delete every owned object, then complete_suspend
    STAY_SUSPENDED = "stay-suspended"  # Suspended and still asked to be: nothing to do
    RESUME = "resume"  # Suspended and no longer asked to be: resume_from_suspend, then reconcile normally


def is_suspend_operative(status: RayServiceStatuses) -> bool:
    """suspendIsOperative: Suspending or Suspended is True, so the rest of the reconcile must not run."""
    return is_condition_true(status.conditions, Type.SUSPENDING) or is_condition_true(
        status.conditions, Type.SUSPENDED
    )


def suspend_action(spec_suspend: bool, status: RayServiceStatuses) -> SuspendAction:
    """handleSuspend's case analysis. Suspending ignores `spec_suspend` (atomic deletion)."""
    if is_condition_true(status.conditions, Type.SUSPENDED):
        return SuspendAction.STAY_SUSPENDED if spec_suspend else SuspendAction.RESUME
    if is_condition_true(status.conditions, Type.SUSPENDING):
        return SuspendAction.DELETE_OWNED
    return SuspendAction.BEGIN if spec_suspend else SuspendAction.NONE


def _with(
    status: RayServiceStatuses, changes: list[tuple[str, ConditionStatus, str, str]], now: datetime
) -> RayServiceStatuses:
    result = status.model_copy(deep=True)
    for condition_type, value, reason, message in changes:
        result.conditions = set_condition(
            result.conditions, condition_type, value, reason, message, result.observed_generation, now
        )
    return result


def begin_suspending(status: RayServiceStatuses, generation: int, now: datetime) -> RayServiceStatuses:
    """Suspend requested: Suspending=True/SuspendRequested, Ready/Upgrade/Rollback False/SuspendInProgress,
    both service statuses cleared, no endpoints, serviceStatus "" and observedGeneration = generation."""
    staged = status.model_copy(deep=True)
    staged.observed_generation = generation
    staged.active_service_status = RayServiceStatus()
    staged.pending_service_status = RayServiceStatus()
    staged.num_serve_endpoints = 0
    staged.service_status = ""
    return _with(
        staged,
        [
            (
                Type.SUSPENDING,
                _TRUE,
                Reason.SUSPEND_REQUESTED,
                "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.",
            ),
            (Type.READY, _FALSE, Reason.SUSPEND_IN_PROGRESS, "RayService is suspending."),
            (Type.UPGRADE_IN_PROGRESS, _FALSE, Reason.SUSPEND_IN_PROGRESS, "No upgrade in progress."),
            (Type.ROLLBACK_IN_PROGRESS, _FALSE, Reason.SUSPEND_IN_PROGRESS, "No rollback in progress."),
        ],
        now,
    )


def suspending_in_progress(status: RayServiceStatuses, now: datetime) -> RayServiceStatuses:
    """Owned objects still exist: Suspending stays True with reason SuspendInProgress."""
    return _with(
        status,
        [
            (
                Type.SUSPENDING,
                _TRUE,
                Reason.SUSPEND_IN_PROGRESS,
                "Waiting for all Kubernetes resources owned by this RayService to be deleted.",
            )
        ],
        now,
    )


def complete_suspend(status: RayServiceStatuses, now: datetime) -> RayServiceStatuses:
    """Every owned object is gone: Suspended=True and the other conditions False/SuspendComplete."""
    return _with(
        status,
        [
            (Type.SUSPENDING, _FALSE, Reason.SUSPEND_COMPLETE, "All owned resources have been deleted."),
            (Type.SUSPENDED, _TRUE, Reason.SUSPEND_COMPLETE, "All owned resources have been deleted."),
            (Type.READY, _FALSE, Reason.SUSPEND_COMPLETE, "RayService is suspended."),
            (Type.UPGRADE_IN_PROGRESS, _FALSE, Reason.SUSPEND_COMPLETE, "No upgrade in progress."),
            (Type.ROLLBACK_IN_PROGRESS, _FALSE, Reason.SUSPEND_COMPLETE, "No rollback in progress."),
        ],
        now,
    )


def resume_from_suspend(status: RayServiceStatuses, generation: int, now: datetime) -> RayServiceStatuses:
    """suspend=false while Suspended: Suspended=False/RayServiceResumed; Ready and UpgradeInProgress are
    removed and re-added as False/Initializing so their lastTransitionTime (and the initializing timeout)
    restart."""
    message = "RayService is initializing after resuming from suspend."
    resumed = status.model_copy(deep=True)
    resumed.observed_generation = generation
    resumed = _with(
        resumed,
        [
            (
                Type.SUSPENDED,
                _FALSE,
                Reason.RAY_SERVICE_RESUMED,
                "Spec.Suspend is false; RayService has resumed.",
            )
        ],
        now,
    )
    for condition_type in (Type.READY, Type.UPGRADE_IN_PROGRESS):
        resumed.conditions = remove_condition(resumed.conditions, condition_type)
        resumed = _with(resumed, [(condition_type, _FALSE, Reason.INITIALIZING, message)], now)
    return resumed
