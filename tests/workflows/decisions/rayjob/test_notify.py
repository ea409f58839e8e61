"""Which raypilot.io/notify notification a RayJob's status change is
(workflows/decisions/rayjob/notify.py)."""

from __future__ import annotations

import pytest

from models.notify import NotifyEvent
from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJobStatus
from workflows.decisions.rayjob.notify import rayjob_notification

D = JobDeploymentStatus


@pytest.mark.parametrize(
    ("previous", "new", "expected"),
    [
        (D.RUNNING, D.COMPLETE, NotifyEvent.COMPLETE),
        (D.RUNNING, D.FAILED, NotifyEvent.FAILED),
        (D.NEW, D.VALIDATION_FAILED, NotifyEvent.FAILED),
        (D.RUNNING, D.RETRYING, NotifyEvent.RETRYING),
        (D.INITIALIZING, D.FAILED, NotifyEvent.FAILED),
        (D.COMPLETE, D.COMPLETE, None),  # no change of state: nothing again
        (D.NEW, D.INITIALIZING, None),
        (D.INITIALIZING, D.RUNNING, None),
        (D.RETRYING, D.NEW, None),
        (D.RUNNING, D.SUSPENDING, None),
    ],
)
def test_the_notification_of_a_change(previous: D, new: D, expected: NotifyEvent | None) -> None:
    moment = rayjob_notification(
        RayJobStatus(job_deployment_status=previous), RayJobStatus(job_deployment_status=new)
    )
    assert (moment.event if moment is not None else None) == expected


def test_details_and_message() -> None:
    new = RayJobStatus(
        job_deployment_status=D.FAILED,
        job_status=JobStatus.FAILED,
        reason=JobFailedReason.APP_FAILED,
        message="Job exited with code 1",
        job_id="sample-abc",
        ray_cluster_name="sample-x1y2z",
        failed=2,
    )
    moment = rayjob_notification(RayJobStatus(job_deployment_status=D.RUNNING), new)
    assert moment is not None
    assert moment.message == "Job exited with code 1"
    assert moment.details == {
        "jobDeploymentStatus": "Failed",
        "jobStatus": "FAILED",
        "succeeded": 0,
        "failed": 2,
        "reason": "AppFailed",
        "jobId": "sample-abc",
        "rayClusterName": "sample-x1y2z",
    }
    complete = rayjob_notification(
        RayJobStatus(job_deployment_status=D.RUNNING), RayJobStatus(job_deployment_status=D.COMPLETE)
    )
    assert complete is not None
    assert complete.message == "The RayJob is complete."
