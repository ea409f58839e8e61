"""How a RayJob status changes: the `Transition` value every RayJob decision returns, and applying it.

KubeRay mutates `rayJob.Status` in place inside `Reconcile` and persists it at the end of the pass
(`updateRayJobStatus`). raypilot's decisions return a `Transition` instead and `apply_transition` produces the
new status, so every change is a value the workflow can log, test and replay.

Times: KubeRay persists `metav1.Time`, which keeps whole seconds only; every deadline and message is
computed from the persisted value. `kube_time` gives the same truncation so raypilot's deadlines and
messages match KubeRay's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJobStatus

__all__ = ["Transition", "apply_transition", "kube_time"]


def kube_time(moment: datetime) -> datetime:
    """`moment` as Kubernetes stores a metav1.Time: UTC, whole seconds."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.replace(microsecond=0)


@dataclass(frozen=True)
class Transition:
    """A change of `jobDeploymentStatus`, with the reason and message KubeRay writes alongside it.

    `reason` / `message` None means "leave the current value" (KubeRay does not touch it on that path);
    `job_status` is set only where KubeRay also overrides the Ray job's status.
    """

    deployment_status: JobDeploymentStatus
    reason: JobFailedReason | None = None
    message: str | None = None
    job_status: JobStatus | None = None

    @property
    def is_terminal(self) -> bool:
        return self.deployment_status in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED)


def apply_transition(status: RayJobStatus, transition: Transition) -> RayJobStatus:
    """The status after `transition` (counters, retries and endTime are
    `rayjob_retry.settle_transition`'s)."""
    update: dict[str, object] = {"job_deployment_status": transition.deployment_status}
    if transition.reason is not None:
        update["reason"] = transition.reason
    if transition.message is not None:
        update["message"] = transition.message
    if transition.job_status is not None:
        update["job_status"] = transition.job_status
    return status.model_copy(update=update)
