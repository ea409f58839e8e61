"""What the RayJob workflow tells Kubernetes in Events: the reasons and messages of KubeRay's
`Recorder.Eventf` calls in rayjob_controller.go (`getOrCreateRayClusterInstance`, `createNewK8sJob`,
`deleteSubmitterJob`, `deleteClusterResources`, `suspendWorkerGroups`, `reconcileServices`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal

EVENT_LOG_SIZE: Final = 50


EventType = Literal["Normal", "Warning"]


class EventReason(StrEnum):
    """KubeRay's event reasons for a RayJob (utils/constant.go)."""

    CREATED_RAYCLUSTER = "CreatedRayCluster"
    FAILED_TO_CREATE_RAYCLUSTER = "FailedToCreateRayCluster"
    DELETED_RAYCLUSTER = "DeletedRayCluster"
    FAILED_TO_DELETE_RAYCLUSTER = "FailedToDeleteRayCluster"
    UPDATED_RAYCLUSTER = "UpdatedRayCluster"
    FAILED_TO_UPDATE_RAYCLUSTER = "FailedToUpdateRayCluster"
    RAYCLUSTER_NOT_FOUND = "RayClusterNotFound"
    CREATED_RAYJOB_SUBMITTER = "CreatedRayJobSubmitter"
    FAILED_TO_CREATE_RAYJOB_SUBMITTER = "FailedToCreateRayJobSubmitter"
    DELETED_RAYJOB_SUBMITTER = "DeletedRayJobSubmitter"
    FAILED_TO_DELETE_RAYJOB_SUBMITTER = "FailedToDeleteRayJobSubmitter"
    CREATED_SERVICE = "CreatedService"
    FAILED_TO_CREATE_SERVICE = "FailedToCreateService"
    # raypilot's own: a finished RayJob's deletion policy matches none of its final state (kuberay#5184).
    RAYCLUSTER_LEFT_BEHIND = "RayClusterLeftBehind"
    # raypilot's own: a failed attempt's driver log, saved before its RayCluster goes (docs/logs.md).
    DRIVER_LOG_SAVED = "DriverLogSaved"


# (type, message format with {ns}, {name} and {error}) as KubeRay writes them.
_EVENTS: Final[Mapping[EventReason, tuple[EventType, str]]] = {
    EventReason.CREATED_RAYCLUSTER: ("Normal", "Created RayCluster {ns}/{name}"),
    EventReason.FAILED_TO_CREATE_RAYCLUSTER: ("Warning", "Failed to create RayCluster {ns}/{name}: {error}"),
    EventReason.DELETED_RAYCLUSTER: ("Normal", "Deleted cluster {ns}/{name}"),
    EventReason.FAILED_TO_DELETE_RAYCLUSTER: ("Warning", "Failed to delete cluster {ns}/{name}: {error}"),
    EventReason.UPDATED_RAYCLUSTER: (
        "Normal",
        "Set the `suspend` field to true for all worker groups in cluster {ns}/{name}",
    ),
    EventReason.FAILED_TO_UPDATE_RAYCLUSTER: (
        "Warning",
        "Failed to suspend worker groups in cluster {ns}/{name}: {error}",
    ),
    EventReason.RAYCLUSTER_NOT_FOUND: (
        "Warning",
        "RayCluster {ns}/{name} set in the clusterSelector is not found. It must be created manually",
    ),
    EventReason.CREATED_RAYJOB_SUBMITTER: ("Normal", "Created Kubernetes Job {ns}/{name}"),
    EventReason.FAILED_TO_CREATE_RAYJOB_SUBMITTER: (
        "Warning",
        "Failed to create new Kubernetes Job {ns}/{name}: {error}",
    ),
    EventReason.DELETED_RAYJOB_SUBMITTER: ("Normal", "Deleted submitter K8s Job {ns}/{name}"),
    EventReason.FAILED_TO_DELETE_RAYJOB_SUBMITTER: (
        "Warning",
        "Failed to delete submitter K8s Job {ns}/{name}: {error}",
    ),
    EventReason.CREATED_SERVICE: ("Normal", "Created the service {ns}/{name}"),
    EventReason.FAILED_TO_CREATE_SERVICE: ("Warning", "Failed to create the service {ns}/{name}, {error}"),
}


@dataclass(frozen=True)
class RayJobEvent:
    """A Kubernetes Event on the RayJob: its type, KubeRay's reason and message."""

    type: EventType
    reason: EventReason
    message: str


def rayjob_event(reason: EventReason, namespace: str, name: str, error: str = "") -> RayJobEvent:
    """The Event KubeRay records for `reason` about the object `namespace/name` (a RayCluster, the submitter
    Job or the head Service); `error` fills the failure events' last part."""
    event_type, message = _EVENTS[reason]
    return RayJobEvent(event_type, reason, message.format(ns=namespace, name=name, error=error))
