"""RayJob lifecycle transitions outside Running's observations: start of an attempt, suspend and resume,
the checks at the top of each state, cluster readiness, InteractiveMode's wait, and validation failures.

KubeRay functions (rayjob_controller.go): `initRayJobStatusIfNeed` (New -> Initializing),
`updateStatusToSuspendingIfNeeded`, the checks that open the Initializing / Waiting / Running branches of
`Reconcile`, the StopJob on deletion, the Initializing branch's "RayCluster ready" step, the Waiting and
Suspended branches, and the validation failure at the top of `Reconcile` (the messages come from
`models.validation.rayjob`, including `validate_rayjob_status`'s rule that only InteractiveMode may be
Waiting).

Where raypilot differs: the random suffixes come from the `random.Random` the workflow passes
(`workflow.random()`), so ids are stable on replay; startTime is `now` truncated to whole seconds, which is
what KubeRay's persisted metav1.Time holds.
"""

from __future__ import annotations

import random
from datetime import datetime

from models.naming import CLUSTER_SELECTOR_KEY, generated_cluster_name, generated_job_id
from models.operator import OperatorConfig
from models.raycluster import ClusterState, RayClusterStatus
from models.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
    RayJob,
    RayJobStatus,
    is_job_terminal,
)
from workflows.decisions.rayjob.deadlines import (
    SUBMITTER_FINISHED_DEADLINE,
    overdue_deadline,
    rayjob_deadlines,
)
from workflows.decisions.rayjob.status import Transition, kube_time

__all__ = [
    "SUSPENDABLE_STATES",
    "adopt_interactive_job_id",
    "is_cluster_ready",
    "is_judged_on_job_state",
    "resume_transition",
    "should_stop_ray_job_on_delete",
    "start_attempt",
    "state_check_transition",
    "suspend_transition",
    "transition_when_cluster_ready",
    "validation_failed_transition",
]

SUSPENDABLE_STATES = frozenset({JobDeploymentStatus.INITIALIZING, JobDeploymentStatus.RUNNING})


def start_attempt(job: RayJob, now: datetime, rand: random.Random) -> RayJobStatus:
    """New -> Initializing: choose this attempt's job id and RayCluster name and start its clock.

    Job id: status.jobId if already set, else spec.jobId, else "<rayjob>-<5 random>"; none in InteractiveMode
    (the user sets spec.jobId later). Cluster: the clusterSelector's `ray.io/cluster`, else "<rayjob>-<5
    random>".
    """
    status = job.status
    name = job.metadata.name
    job_id = status.job_id
    if not job_id and job.spec.submission_mode != JobSubmissionMode.INTERACTIVE_MODE:
        job_id = job.spec.job_id or generated_job_id(name, rand)
    cluster_name = status.ray_cluster_name
    if not cluster_name:
        cluster_name = job.spec.cluster_selector.get(CLUSTER_SELECTOR_KEY, "") or generated_cluster_name(
            name, rand
        )
    return status.model_copy(
        update={
            "job_id": job_id,
            "ray_cluster_name": cluster_name,
            "job_deployment_status": JobDeploymentStatus.INITIALIZING,
            "start_time": kube_time(now),
        }
    )


def suspend_transition(job: RayJob) -> Transition | None:
    """spec.suspend is honoured only from Initializing and Running (-> Suspending)."""
    if job.spec.suspend and job.status.job_deployment_status in SUSPENDABLE_STATES:
        return Transition(JobDeploymentStatus.SUSPENDING)
    return None


def state_check_transition(
    job: RayJob, now: datetime, config: OperatorConfig, submitter_finished_at: datetime | None = None
) -> Transition | None:
    """The checks that open the current state's branch, in KubeRay's order: suspend (Initializing, Running),
    then each passed deadline (see `rayjob_deadlines`). None: the state's work goes on."""
    suspend = suspend_transition(job)
    if suspend is not None:
        return suspend
    passed = overdue_deadline(rayjob_deadlines(job, config, submitter_finished_at), now)
    return passed.transition if passed is not None else None


def is_judged_on_job_state(
    job: RayJob, now: datetime, config: OperatorConfig, submitter_finished_at: datetime | None = None
) -> bool:
    """Whether the check that applies now is a deadline judged on the Ray job's state (the submitter
    finished but the job is not terminal): the workflow takes one fresh look at the job before applying it.
    A suspend or a deadline that holds whatever the job does (activeDeadlineSeconds) applies as KubeRay's."""
    if suspend_transition(job) is not None:
        return False
    passed = overdue_deadline(rayjob_deadlines(job, config, submitter_finished_at), now)
    return passed is not None and passed.name == SUBMITTER_FINISHED_DEADLINE


def is_cluster_ready(cluster_status: RayClusterStatus | None) -> bool:
    """A RayJob submits only once its RayCluster's `status.state` is `ready`."""
    return cluster_status is not None and cluster_status.state == ClusterState.READY


def transition_when_cluster_ready(job: RayJob) -> Transition:
    """Initializing, cluster ready and dashboard URL known: InteractiveMode waits for a job id; the other
    modes run (K8sJobMode once its submitter Job exists)."""
    if job.spec.submission_mode == JobSubmissionMode.INTERACTIVE_MODE:
        return Transition(JobDeploymentStatus.WAITING)
    return Transition(JobDeploymentStatus.RUNNING)


def adopt_interactive_job_id(job: RayJob) -> RayJobStatus | None:
    """Waiting (InteractiveMode): once the user sets spec.jobId, adopt it and run; None keeps waiting."""
    if job.status.job_deployment_status != JobDeploymentStatus.WAITING or not job.spec.job_id:
        return None
    return job.status.model_copy(
        update={"job_id": job.spec.job_id, "job_deployment_status": JobDeploymentStatus.RUNNING}
    )


def resume_transition(job: RayJob) -> Transition | None:
    """Suspended: spec.suspend back to false starts a new attempt (-> New, jobStatus "")."""
    if job.status.job_deployment_status == JobDeploymentStatus.SUSPENDED and not job.spec.suspend:
        return Transition(JobDeploymentStatus.NEW, job_status=JobStatus.NEW)
    return None


def should_stop_ray_job_on_delete(status: RayJobStatus) -> bool:
    """Deleting the RayJob stops its Ray job first unless the job is already terminal (a New job included:
    it may have been submitted without the status saying so yet)."""
    return not is_job_terminal(status.job_status)


def validation_failed_transition(message: str) -> Transition:
    """An invalid spec or status: ValidationFailed, a dead end (KubeRay never leaves it)."""
    return Transition(JobDeploymentStatus.VALIDATION_FAILED, JobFailedReason.VALIDATION_FAILED, message)
