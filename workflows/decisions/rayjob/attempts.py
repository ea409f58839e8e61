"""The attempt a RayJob with `raypilot.io/retry-policy` is on: its number in the entrypoint's environment and
in the status, and the status of a retry on the same RayCluster (HTTPMode).

KubeRay gives an attempt no number, so an entrypoint cannot tell a retry from the first run (kuberay#5211).
"""

from __future__ import annotations

import json
import random
from datetime import datetime

import yaml

from models.meta import Condition, ConditionStatus
from models.naming import generated_job_id
from models.rayjob import JobDeploymentStatus, JobStatus, RayJob, RayJobInfo, RayJobStatus
from workflows.decisions.rayjob.goformat import load_go_yaml
from workflows.decisions.rayjob.retry_policy import RetryPlan
from workflows.decisions.rayjob.status import kube_time

__all__ = [
    "ATTEMPT_CONDITION",
    "ATTEMPT_ENV",
    "attempt_condition",
    "attempt_number",
    "status_for_retry_on_same_cluster",
    "with_attempt_env",
]

ATTEMPT_ENV = "RAYJOB_ATTEMPT"
ATTEMPT_CONDITION = "RayJobAttempt"


def attempt_number(status: RayJobStatus) -> int:
    """1 for the first attempt; each failed attempt before it adds one (a success ends the RayJob)."""
    return status.failed + 1


def with_attempt_env(job: RayJob, attempt: int) -> RayJob:
    """The RayJob with `RAYJOB_ATTEMPT=<attempt>` in its runtime_env's env_vars (what the dashboard, the
    submitter's `ray job submit` and a sidecar pass to the entrypoint). A runtimeEnvYAML that does not parse
    is left alone: submitting reports that error as it would without the number."""
    text = job.spec.runtime_env_yaml
    try:
        runtime_env = load_go_yaml(text) if text else {}
    except yaml.YAMLError:
        return job
    if runtime_env is None:
        runtime_env = {}
    if not isinstance(runtime_env, dict):
        return job
    env_vars = dict(runtime_env.get("env_vars") or {})
    env_vars[ATTEMPT_ENV] = str(attempt)
    merged = {**runtime_env, "env_vars": env_vars}
    spec = job.spec.model_copy(update={"runtime_env_yaml": json.dumps(merged)})
    return job.model_copy(update={"spec": spec})


def attempt_condition(attempt: int, plan: RetryPlan | None, now: datetime) -> Condition:
    """`RayJobAttempt`: the current attempt's number and what became of the previous one."""
    if plan is None:
        return Condition(
            type=ATTEMPT_CONDITION,
            status=ConditionStatus.TRUE,
            last_transition_time=kube_time(now),
            reason="FirstAttempt",
            message=f"attempt {attempt}",
        )
    if not plan.retry:
        return Condition(
            type=ATTEMPT_CONDITION,
            status=ConditionStatus.FALSE,
            last_transition_time=kube_time(now),
            reason=f"{plan.failure.value}NotRetried",
            message=f"attempt {attempt} failed ({plan.failure.value}); no retry",
        )
    where = "the same RayCluster" if plan.same_cluster else "a new RayCluster"
    return Condition(
        type=ATTEMPT_CONDITION,
        status=ConditionStatus.TRUE,
        last_transition_time=kube_time(now),
        reason=f"{plan.failure.value}Retried",
        message=(
            f"attempt {attempt + 1}: attempt {attempt} failed ({plan.failure.value}); "
            f"retried on {where} after {int(plan.delay.total_seconds())}s"
        ),
    )


def status_for_retry_on_same_cluster(
    job: RayJob, attempt: int, now: datetime, rand: random.Random
) -> RayJobStatus:
    """Retrying -> Running on the cluster of the failed attempt: a new submission id (Ray refuses a used
    one), the Ray job's fields cleared, a new startTime (activeDeadlineSeconds counts per attempt, as when
    KubeRay starts a new one); cluster, dashboard and counters stay."""
    job_id = f"{job.spec.job_id}-{attempt}" if job.spec.job_id else generated_job_id(job.metadata.name, rand)
    return job.status.model_copy(
        update={
            "job_id": job_id,
            "job_status": JobStatus.NEW,
            "job_deployment_status": JobDeploymentStatus.RUNNING,
            "reason": None,
            "message": "",
            "ray_job_info": RayJobInfo(),
            "job_status_check_failure_start_time": None,
            "start_time": kube_time(now),
        }
    )
