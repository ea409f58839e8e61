"""RayService conditions: how KubeRay sets them, what they say, and the phase raypilot reports.

KubeRay counterparts (ray-operator/controllers/ray/rayservice_controller.go):
- `set_condition`            -> setCondition + meta.SetStatusCondition (lastTransitionTime moves only when
                                the status flips; reason, message and observedGeneration always follow)
- `calculate_conditions`     -> calculateConditions
- `mark_failed_on_initializing_timeout` -> markFailedOnInitializingTimeout (parsing and timing in
                                rayservice_timeout)
- `service_status`           -> the `serviceStatus` rule at the end of calculateStatus

Where raypilot differs: time comes in as `now` (no time.Now()), the conditions are never mutated in place
(every function returns a new status), and `ray_phase` is raypilot's own summary for the `RayPhase` search
attribute (contract section 4); it is not a KubeRay field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from models.meta import Condition, ConditionStatus, find_condition, is_condition_true
from models.rayservice import (
    RayServiceConditionReason,
    RayServiceConditionType,
    RayServiceStatuses,
)
from workflows.decisions.rayservice.timeout import initializing_timeout_outcome

__all__ = [
    "MESSAGE_BOTH_CLUSTERS",
    "MESSAGE_INITIALIZING",
    "MESSAGE_NON_ZERO_ENDPOINTS",
    "MESSAGE_NO_ACTIVE_CLUSTER",
    "MESSAGE_NO_PENDING_CLUSTER",
    "MESSAGE_ZERO_ENDPOINTS",
    "REASON_INITIALIZING_TIMEOUT",
    "EventType",
    "RayPhase",
    "RayServiceEvent",
    "calculate_conditions",
    "is_initializing_timeout",
    "mark_failed_on_initializing_timeout",
    "ray_phase",
    "remove_condition",
    "service_status",
    "set_condition",
    "with_condition",
    "without_condition",
]

Ready: Final = RayServiceConditionType.READY
UpgradeInProgress: Final = RayServiceConditionType.UPGRADE_IN_PROGRESS
Reason = RayServiceConditionReason

MESSAGE_INITIALIZING: Final = "RayService is initializing"
REASON_INITIALIZING_TIMEOUT: Final = "RayServiceInitializingTimeout"  # its Warning Event
MESSAGE_NON_ZERO_ENDPOINTS: Final = "Number of serve endpoints is greater than 0"
MESSAGE_ZERO_ENDPOINTS: Final = "Number of serve endpoints dropped to 0"
MESSAGE_BOTH_CLUSTERS: Final = "Both active and pending Ray clusters exist"
MESSAGE_NO_PENDING_CLUSTER: Final = "Active Ray cluster exists and no pending Ray cluster"
MESSAGE_NO_ACTIVE_CLUSTER: Final = (
    "No active Ray cluster exists, and the RayService is not initializing. "
    "Please open a GitHub issue in the KubeRay repository."
)

EventType = Literal["Normal", "Warning"]
RayPhase = Literal["Initializing", "Running", "Upgrading", "RollingBack", "Suspended", "Failed"]


@dataclass(frozen=True)
class RayServiceEvent:
    """A Kubernetes Event KubeRay would record on the RayService (the workflow decides how to emit it)."""

    type: EventType
    reason: str
    message: str


def set_condition(
    conditions: Sequence[Condition],
    condition_type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    observed_generation: int,
    now: datetime,
) -> list[Condition]:
    """meta.SetStatusCondition on a copy: a new type is appended with lastTransitionTime=now; an existing one
    keeps its lastTransitionTime unless its status changes, and always takes the new
    reason/message/generation."""
    previous = next((condition for condition in conditions if condition.type == condition_type), None)
    transition = now
    if previous is not None and previous.status == status and previous.last_transition_time is not None:
        transition = previous.last_transition_time
    condition = Condition(
        type=condition_type,
        status=status,
        reason=reason,
        message=message,
        observed_generation=observed_generation,
        last_transition_time=transition,
    )
    updated = [other.model_copy() if other.type != condition_type else condition for other in conditions]
    return updated if previous is not None else [*updated, condition]


def remove_condition(conditions: Sequence[Condition], condition_type: str) -> list[Condition]:
    """meta.RemoveStatusCondition on a copy."""
    return [condition.model_copy() for condition in conditions if condition.type != condition_type]


def with_condition(
    status: RayServiceStatuses,
    condition_type: str,
    value: ConditionStatus,
    reason: str,
    message: str,
    now: datetime,
) -> RayServiceStatuses:
    """A copy of `status` with one condition set at the status' observedGeneration (as KubeRay's
    setCondition stamps it)."""
    result = status.model_copy(deep=True)
    result.conditions = set_condition(
        result.conditions, condition_type, value, reason, message, result.observed_generation, now
    )
    return result


def without_condition(status: RayServiceStatuses, condition_type: str) -> RayServiceStatuses:
    """A copy of `status` without the condition of `condition_type`."""
    result = status.model_copy(deep=True)
    result.conditions = remove_condition(result.conditions, condition_type)
    return result


def is_initializing_timeout(conditions: Sequence[Condition]) -> bool:
    """isInitializingTimeout: Ready is False with reason InitializingTimeout (terminal, any generation)."""
    ready = find_condition(list(conditions), Ready)
    return (
        ready is not None
        and ready.status == ConditionStatus.FALSE
        and ready.reason == Reason.INITIALIZING_TIMEOUT
    )


def mark_failed_on_initializing_timeout(
    status: RayServiceStatuses, annotations: Mapping[str, str], now: datetime
) -> tuple[RayServiceStatuses, list[RayServiceEvent]]:
    """markFailedOnInitializingTimeout: once Ready has been False/Initializing for the annotated timeout,
    clear both cluster names (so cleanup deletes every cluster) and set Ready False/InitializingTimeout
    (terminal)."""
    outcome = initializing_timeout_outcome(status.conditions, annotations, now)
    if outcome is None:
        return status, []
    result = status.model_copy(deep=True)
    result.active_service_status.ray_cluster_name = ""
    result.pending_service_status.ray_cluster_name = ""
    result = with_condition(
        result, Ready, ConditionStatus.FALSE, Reason.INITIALIZING_TIMEOUT, outcome.condition_message, now
    )
    return result, [RayServiceEvent("Warning", REASON_INITIALIZING_TIMEOUT, outcome.event_message)]


def calculate_conditions(
    status: RayServiceStatuses, annotations: Mapping[str, str], now: datetime
) -> tuple[RayServiceStatuses, list[RayServiceEvent]]:
    """calculateConditions: Ready from numServeEndpoints (or the initializing timeout), UpgradeInProgress from
    which cluster names are set. Returns the new status and the events KubeRay would record."""
    result = status.model_copy(deep=True)
    events: list[RayServiceEvent] = []
    if not result.conditions:
        result = with_condition(
            result, Ready, ConditionStatus.FALSE, Reason.INITIALIZING, MESSAGE_INITIALIZING, now
        )
        result = with_condition(
            result, UpgradeInProgress, ConditionStatus.FALSE, Reason.INITIALIZING, MESSAGE_INITIALIZING, now
        )

    if result.num_serve_endpoints > 0:
        result = with_condition(
            result,
            Ready,
            ConditionStatus.TRUE,
            Reason.NON_ZERO_SERVE_ENDPOINTS,
            MESSAGE_NON_ZERO_ENDPOINTS,
            now,
        )
    elif is_condition_true(result.conditions, Ready):
        result = with_condition(
            result, Ready, ConditionStatus.FALSE, Reason.ZERO_SERVE_ENDPOINTS, MESSAGE_ZERO_ENDPOINTS, now
        )
    else:
        result, events = mark_failed_on_initializing_timeout(result, annotations, now)

    active = result.active_service_status.ray_cluster_name
    pending = result.pending_service_status.ray_cluster_name
    if active and pending:
        result = with_condition(
            result,
            UpgradeInProgress,
            ConditionStatus.TRUE,
            Reason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            MESSAGE_BOTH_CLUSTERS,
            now,
        )
    elif active:
        result = with_condition(
            result,
            UpgradeInProgress,
            ConditionStatus.FALSE,
            Reason.NO_PENDING_CLUSTER,
            MESSAGE_NO_PENDING_CLUSTER,
            now,
        )
    else:
        upgrade = find_condition(result.conditions, UpgradeInProgress)
        if upgrade is None or upgrade.reason not in (Reason.INITIALIZING, Reason.INITIALIZING_TIMEOUT):
            result = with_condition(
                result,
                UpgradeInProgress,
                ConditionStatus.UNKNOWN,
                Reason.NO_ACTIVE_CLUSTER,
                MESSAGE_NO_ACTIVE_CLUSTER,
                now,
            )
    return result, events


def service_status(conditions: Sequence[Condition]) -> Literal["Running", ""]:
    """`serviceStatus`: "Running" exactly when Ready is True."""
    return "Running" if is_condition_true(list(conditions), Ready) else ""


def ray_phase(status: RayServiceStatuses) -> RayPhase:
    """raypilot's one-word phase of a RayService (the `RayPhase` search attribute)."""
    conditions = status.conditions
    if is_condition_true(conditions, RayServiceConditionType.SUSPENDED) or is_condition_true(
        conditions, RayServiceConditionType.SUSPENDING
    ):
        return "Suspended"
    ready = find_condition(conditions, Ready)
    if (
        ready is not None
        and ready.status == ConditionStatus.FALSE
        and ready.reason
        in (
            Reason.INITIALIZING_TIMEOUT,
            Reason.VALIDATION_FAILED,
        )
    ):
        return "Failed"
    if is_condition_true(conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS):
        return "RollingBack"
    if is_condition_true(conditions, UpgradeInProgress):
        return "Upgrading"
    if status.active_service_status.ray_cluster_name and is_condition_true(conditions, Ready):
        return "Running"
    if (
        status.active_service_status.ray_cluster_name
        and ready is not None
        and ready.reason == (Reason.ZERO_SERVE_ENDPOINTS)
    ):
        # Served before and lost its endpoints: still the running service, not a fresh start.
        return "Running"
    return "Initializing"
