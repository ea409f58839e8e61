"""Which `raypilot.io/notify` notification a RayJob's status change is (issue #34): the job reached Complete,
failed for good (Failed, ValidationFailed), or failed with retries left (Retrying). Other changes notify
nothing."""

from __future__ import annotations

from typing import Final

from models.notify import NotifyEvent
from models.rayjob import JobDeploymentStatus, RayJobStatus
from wire.notify import Details, NotifyMoment

__all__ = ["rayjob_notification"]

_EVENT_OF: Final = {
    JobDeploymentStatus.COMPLETE: NotifyEvent.COMPLETE,
    JobDeploymentStatus.FAILED: NotifyEvent.FAILED,
    JobDeploymentStatus.VALIDATION_FAILED: NotifyEvent.FAILED,
    JobDeploymentStatus.RETRYING: NotifyEvent.RETRYING,
}
_DEFAULT_MESSAGE: Final = {
    NotifyEvent.COMPLETE: "The RayJob is complete.",
    NotifyEvent.FAILED: "The RayJob failed.",
    NotifyEvent.RETRYING: "The RayJob failed and is retried.",
}


def rayjob_notification(previous: RayJobStatus, new: RayJobStatus) -> NotifyMoment | None:
    """The notification of the change `previous` -> `new`, or None."""
    if new.job_deployment_status == previous.job_deployment_status:
        return None
    event = _EVENT_OF.get(new.job_deployment_status)
    if event is None:
        return None
    details: Details = {
        "jobDeploymentStatus": new.job_deployment_status.value,
        "jobStatus": new.job_status.value,
        "succeeded": new.succeeded,
        "failed": new.failed,
    }
    if new.reason is not None:
        details["reason"] = new.reason.value
    if new.job_id:
        details["jobId"] = new.job_id
    if new.ray_cluster_name:
        details["rayClusterName"] = new.ray_cluster_name
    return NotifyMoment(event, new.message or _DEFAULT_MESSAGE[event], details)
