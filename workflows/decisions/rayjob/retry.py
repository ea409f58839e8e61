"""RayJob retries: the succeeded/failed counters, whether a failed attempt is retried, and what a retry
resets.

KubeRay functions: `checkBackoffLimitAndUpdateStatusIfNeeded` (run after every state change of a reconcile
pass), the endTime stamp of `updateRayJobStatus`, and the reset in the `Suspending, Retrying` branch of
`Reconcile`.

Where raypilot differs: KubeRay runs the counter logic at the end of every pass and relies on terminal states
returning early so that an outcome is counted once; raypilot calls `settle_transition` once per deployment
status change, which counts each attempt's outcome exactly once by construction.
"""

from __future__ import annotations

from datetime import datetime

from models.raycluster import RayClusterStatus
from models.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    RayJobInfo,
    RayJobSpec,
    RayJobStatus,
    is_job_deployment_terminal,
)
from workflows.decisions.rayjob.status import kube_time

__all__ = [
    "NEVER_RETRIED_REASONS",
    "count_attempt_outcome",
    "settle_transition",
    "should_retry",
    "status_after_resources_released",
]

# A passed activeDeadlineSeconds or a dashboard that stopped answering would only fail again.
NEVER_RETRIED_REASONS = frozenset(
    {JobFailedReason.DEADLINE_EXCEEDED, JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED}
)


def count_attempt_outcome(status: RayJobStatus) -> RayJobStatus:
    """Counters after an attempt ended: failed +1 on Failed, succeeded +1 on Complete with the job
    SUCCEEDED."""
    failed = status.failed + (1 if status.job_deployment_status == JobDeploymentStatus.FAILED else 0)
    succeeded = status.succeeded + (
        1
        if status.job_deployment_status == JobDeploymentStatus.COMPLETE
        and status.job_status == JobStatus.SUCCEEDED
        else 0
    )
    return status.model_copy(update={"failed": failed, "succeeded": succeeded})


def should_retry(spec: RayJobSpec, status: RayJobStatus, retry: bool | None = None) -> bool:
    """A Failed attempt (already counted) is retried while failed < backoffLimit + 1, unless it failed for a
    reason that retrying cannot fix. PreRunningDeadlineExceeded, SubmissionFailed, AppFailed and grace-period
    failures are retried. `retry` (raypilot.io/retry-policy) replaces the judgement of the reason."""
    retryable = status.reason not in NEVER_RETRIED_REASONS if retry is None else retry
    return (
        status.job_deployment_status == JobDeploymentStatus.FAILED
        and status.failed < spec.backoff_limit + 1
        and retryable
    )


def settle_transition(
    spec: RayJobSpec,
    previous: RayJobStatus,
    current: RayJobStatus,
    now: datetime,
    retry: bool | None = None,
) -> RayJobStatus:
    """What KubeRay does at the end of a pass that changed the deployment status: count the outcome, turn a
    retryable failure into Retrying, and stamp endTime when the new status is terminal (Complete/Failed).
    `retry`: the retry policy's verdict on a failure (None: KubeRay's)."""
    if current.job_deployment_status == previous.job_deployment_status:
        return current
    settled = count_attempt_outcome(current)
    if should_retry(spec, settled, retry):
        settled = settled.model_copy(update={"job_deployment_status": JobDeploymentStatus.RETRYING})
    if is_job_deployment_terminal(settled.job_deployment_status):
        settled = settled.model_copy(update={"end_time": kube_time(now)})
    return settled


def status_after_resources_released(status: RayJobStatus) -> RayJobStatus:
    """Once the RayCluster and submitter of a Suspending or Retrying job are gone: forget the attempt
    (cluster, dashboard, job id, job info, reason, message, failing-checks clock; jobStatus back to "") and
    move Suspending -> Suspended, Retrying -> New. Counters, startTime and endTime are kept; the next
    attempt gets a new startTime, cluster name and job id when it leaves New."""
    next_state = {
        JobDeploymentStatus.SUSPENDING: JobDeploymentStatus.SUSPENDED,
        JobDeploymentStatus.RETRYING: JobDeploymentStatus.NEW,
    }.get(status.job_deployment_status, status.job_deployment_status)
    return status.model_copy(
        update={
            "ray_cluster_status": RayClusterStatus(),
            "ray_cluster_name": "",
            "dashboard_url": "",
            "job_id": "",
            "message": "",
            "reason": None,
            "ray_job_info": RayJobInfo(),
            "job_status_check_failure_start_time": None,
            "job_status": JobStatus.NEW,
            "job_deployment_status": next_state,
        }
    )
