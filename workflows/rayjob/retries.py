"""Retries that fit the failure, the workflow's side (`raypilot.io/retry-policy`):
the policy's verdict when an attempt fails, the `RayJobAttempt` condition, the back-off before the next
attempt and the retry on the same RayCluster. The decisions are in `workflows.decisions.rayjob.retry_policy`
and `workflows.decisions.rayjob.attempts`; without the annotation nothing here changes KubeRay's behaviour.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.meta import Condition, with_condition_replaced
    from models.rayjob import JobDeploymentStatus, RayJob, RayJobStatus
    from workflows.decisions.rayjob.attempts import (
        attempt_condition,
        attempt_number,
        status_for_retry_on_same_cluster,
        with_attempt_env,
    )
    from workflows.decisions.rayjob.retry import count_attempt_outcome
    from workflows.decisions.rayjob.retry_policy import RetryPlan, plan_retry

from workflows.rayjob.state import AttemptState, RayJobState


def retry_verdict(state: RayJobState, previous: RayJobStatus, new: RayJobStatus) -> bool | None:
    """When an attempt just failed and the RayJob has a retry policy: its class's verdict (kept as the
    state's retry plan); None otherwise (KubeRay's rule)."""
    policy = state.retry_policy
    if (
        policy is None
        or new.job_deployment_status != JobDeploymentStatus.FAILED
        or previous.job_deployment_status == JobDeploymentStatus.FAILED
    ):
        return None
    answer = state.attempt.job_answer
    plan = plan_retry(policy, count_attempt_outcome(new), answer.error_type if answer is not None else "")
    state.retry_plan = plan
    return plan.retry


def settled_with_attempt(
    state: RayJobState, previous: RayJobStatus, settled: RayJobStatus, now: datetime
) -> RayJobStatus:
    """The settled status with the RayJobAttempt condition of a RayJob with a retry policy, and the time
    the next attempt may start."""
    if state.retry_policy is None or settled.job_deployment_status == previous.job_deployment_status:
        return settled
    phase = settled.job_deployment_status
    condition: Condition | None = None
    if phase == JobDeploymentStatus.INITIALIZING and settled.failed == 0:
        condition = attempt_condition(1, None, now)
    elif phase == JobDeploymentStatus.RETRYING and state.retry_plan is not None:
        state.retry_at = now + state.retry_plan.delay
        condition = attempt_condition(settled.failed, state.retry_plan, now)
    elif phase == JobDeploymentStatus.FAILED and state.retry_plan is not None:
        refused = RetryPlan(state.retry_plan.failure, retry=False)
        condition = attempt_condition(settled.failed, refused, now)
    if condition is None:
        return settled
    return settled.model_copy(update={"conditions": with_condition_replaced(settled.conditions, condition)})


def job_for_attempt(state: RayJobState) -> RayJob:
    """The RayJob as this attempt submits it: with RAYJOB_ATTEMPT in its runtime_env when it has a retry
    policy, else unchanged."""
    if state.retry_policy is None:
        return state.job
    return with_attempt_env(state.job, attempt_number(state.job.status))


def retries_on_same_cluster(state: RayJobState) -> bool:
    """Whether the current Retrying keeps the failed attempt's RayCluster."""
    plan = state.retry_plan
    return (
        state.retry_policy is not None
        and plan is not None
        and plan.retry
        and plan.same_cluster
        and state.job.status.job_deployment_status == JobDeploymentStatus.RETRYING
    )


def restart_on_same_cluster(state: RayJobState, now: datetime) -> RayJobStatus:
    """The attempt state and status of a retry on the same RayCluster (HTTPMode): the cluster, its head
    Service and dashboard stay; the Ray job is submitted anew."""
    previous = state.attempt
    state.attempt = AttemptState(
        cluster_spec=previous.cluster_spec,
        cluster_created=previous.cluster_created,
        head_service_created=previous.head_service_created,
    )
    return status_for_retry_on_same_cluster(
        state.job, attempt_number(state.job.status), now, workflow.random()
    )
