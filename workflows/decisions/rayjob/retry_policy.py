"""Retries that fit the failure (kuberay#2192, #4971/#4972, #5211): the `raypilot.io/retry-policy` annotation.

KubeRay retries every failed attempt alike (except a passed activeDeadlineSeconds or status-check timeout),
at once and always on a new RayCluster. With this annotation a RayJob says, per class of failure, whether to
retry, after what back-off, and (HTTPMode) whether on the same RayCluster:

    raypilot.io/retry-policy: |
      default: {retry: true}
      classes:
        Application: {retry: false}                       # the entrypoint exited non-zero: fail fast
        RuntimeEnvSetup: {backoff: {initial: 10s, factor: 2, max: 5m}}
        SupervisorStart: {sameCluster: true}

A failure is classified by Ray's `error_type` (the dashboard's JobDetails) and the RayJob's failure reason
(`classify_failure`). A class the policy does not list follows `default`, and without `default` KubeRay's
rule. `backoffLimit` still bounds the number of retries. The attempt number reaches the entrypoint as
`RAYJOB_ATTEMPT` (runtime_env env_vars) and the status as the `RayJobAttempt` condition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any, Final

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from models.formats import parse_go_duration_seconds
from models.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
    RayJob,
    RayJobStatus,
)
from workflows.decisions.rayjob.retry import NEVER_RETRIED_REASONS
from workflows.decisions.rayjob.running import (
    HEAD_POD_NOT_FOUND_MESSAGE,
    JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE,
)

__all__ = [
    "RETRY_POLICY_ANNOTATION",
    "ClassPolicy",
    "FailureClass",
    "RetryPlan",
    "RetryPolicy",
    "backoff_delay",
    "classify_failure",
    "parse_retry_policy",
    "plan_retry",
    "retry_policy_problem",
    "same_cluster_refusal",
]

RETRY_POLICY_ANNOTATION: Final = "raypilot.io/retry-policy"


class FailureClass(StrEnum):
    """Why an attempt failed, as far as retrying cares."""

    APPLICATION = "Application"  # the entrypoint ran and failed (or could not start): the user's code
    RUNTIME_ENV_SETUP = "RuntimeEnvSetup"  # pip/conda/working_dir setup failed
    SUPERVISOR_START = "SupervisorStart"  # Ray could not start or schedule the job's supervisor
    NODE_DIED = "NodeDied"  # the node or head holding the job went away
    DEADLINE = "Deadline"  # activeDeadlineSeconds or preRunningDeadlineSeconds passed
    SUBMISSION = "Submission"  # the submitter failed while the Ray job had not failed
    OTHER = "Other"


_BY_ERROR_TYPE: Final[dict[str, FailureClass]] = {
    "RUNTIME_ENV_SETUP_FAILURE": FailureClass.RUNTIME_ENV_SETUP,
    "JOB_SUPERVISOR_ACTOR_START_TIMEOUT": FailureClass.SUPERVISOR_START,
    "JOB_SUPERVISOR_ACTOR_START_FAILURE": FailureClass.SUPERVISOR_START,
    "JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE": FailureClass.SUPERVISOR_START,
    "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE": FailureClass.SUPERVISOR_START,
    "JOB_SUPERVISOR_ACTOR_DIED": FailureClass.NODE_DIED,
    "JOB_ENTRYPOINT_COMMAND_START_ERROR": FailureClass.APPLICATION,
    "JOB_ENTRYPOINT_COMMAND_ERROR": FailureClass.APPLICATION,
}
_DEADLINES: Final = frozenset(
    {JobFailedReason.DEADLINE_EXCEEDED, JobFailedReason.PRE_RUNNING_DEADLINE_EXCEEDED}
)
_LOST_JOB_MESSAGES: Final = frozenset({HEAD_POD_NOT_FOUND_MESSAGE, JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE})


def classify_failure(status: RayJobStatus, error_type: str) -> FailureClass:
    """The class of a Failed attempt from its reason, message and jobStatus and Ray's `error_type` (the last
    JobDetails seen; "" when none). Deadlines first: they end an attempt whatever the Ray job was doing."""
    reason = status.reason
    if reason in _DEADLINES:
        return FailureClass.DEADLINE
    if reason == JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED or status.message in _LOST_JOB_MESSAGES:
        return FailureClass.NODE_DIED
    if error_type in _BY_ERROR_TYPE and status.job_status == JobStatus.FAILED:
        return _BY_ERROR_TYPE[error_type]
    if reason == JobFailedReason.SUBMISSION_FAILED:
        return FailureClass.SUBMISSION
    if reason == JobFailedReason.APP_FAILED and status.job_status == JobStatus.FAILED:
        return FailureClass.APPLICATION
    return FailureClass.OTHER


# ---- the annotation ---------------------------------------------------------------------------------------


def _duration(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise ValueError("must be a duration such as 10s, 1m30s")
    seconds = parse_go_duration_seconds(value.strip())
    if seconds < 0:
        raise ValueError("must not be negative")
    return timedelta(seconds=seconds)


class Backoff(BaseModel):
    """Delay before retry k (1-based): min(initial * factor^(k-1), max)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    initial: timedelta = timedelta(0)
    factor: float = Field(default=2.0, ge=1.0)
    max: timedelta | None = None

    @field_validator("initial", "max", mode="before")
    @classmethod
    def _go_duration(cls, value: Any) -> timedelta | None:
        return None if value is None else _duration(value)


class ClassPolicy(BaseModel):
    """What to do after a failure of one class. `retry` unset: KubeRay's rule."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    retry: bool | None = None
    backoff: Backoff = Field(default_factory=Backoff)
    same_cluster: bool = Field(default=False, alias="sameCluster")


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default: ClassPolicy = Field(default_factory=ClassPolicy)
    classes: dict[FailureClass, ClassPolicy] = Field(default_factory=dict)

    def for_class(self, failure: FailureClass) -> ClassPolicy:
        return self.classes.get(failure, self.default)


def _field_path(location: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in location) or "(top level)"


def parse_retry_policy(job: RayJob) -> RetryPolicy | None:
    """The RayJob's retry policy, None without the annotation; ValueError (naming the annotation and the
    field) when it is unusable."""
    text = job.metadata.annotations.get(RETRY_POLICY_ANNOTATION)
    if text is None:
        return None
    prefix = f"metadata.annotations[{RETRY_POLICY_ANNOTATION}]"
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{prefix}: not YAML or JSON: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"{prefix}: must be a mapping with `default` and/or `classes`")
    try:
        policy = RetryPolicy.model_validate(json.loads(json.dumps(loaded, default=str)))
    except ValidationError as error:
        first = error.errors()[0]
        message = first["msg"]
        if first["type"] == "enum":
            message += f" (classes: {', '.join(failure.value for failure in FailureClass)})"
        raise ValueError(f"{prefix}: {_field_path(first['loc'])}: {message}") from None
    same_cluster = [policy.default, *policy.classes.values()]
    if any(entry.same_cluster for entry in same_cluster):
        refused = same_cluster_refusal(job)
        if refused is not None:
            raise ValueError(f"{prefix}: sameCluster: {refused}")
    return policy


# Why a retry on the same RayCluster is refused, per submission mode: only in HTTPMode does raypilot itself
# submit the Ray job (spec.entrypoint through the dashboard), so only there can it submit it again.
_SAME_CLUSTER_REFUSALS: Final = {
    JobSubmissionMode.INTERACTIVE_MODE: (
        "not available with submissionMode InteractiveMode: there you submit the Ray job yourself and name "
        "it in spec.jobId, which is set once, so raypilot has no job of its own to submit again (nor does "
        "KubeRay retry: backoffLimit is incompatible with InteractiveMode); use HTTPMode (raypilot submits "
        "spec.entrypoint)"
    ),
    JobSubmissionMode.K8S_JOB_MODE: (
        "not available with submissionMode K8sJobMode: its submitter Kubernetes Job runs once per "
        "RayCluster; use HTTPMode (raypilot submits spec.entrypoint through the dashboard)"
    ),
    JobSubmissionMode.SIDECAR_MODE: (
        "not available with submissionMode SidecarMode: its submitter container runs once, in the head Pod; "
        "use HTTPMode (raypilot submits spec.entrypoint through the dashboard)"
    ),
}


def same_cluster_refusal(job: RayJob) -> str | None:
    """Why this RayJob cannot be retried on the same RayCluster (sameCluster: true); None when it can."""
    if job.spec.cluster_selector:
        return (
            "needs a RayCluster of the RayJob's own: with clusterSelector the RayCluster is shared, not the "
            "RayJob's to keep for its retries"
        )
    return _SAME_CLUSTER_REFUSALS.get(job.spec.submission_mode)


def retry_policy_problem(job: RayJob) -> str | None:
    """Why the `raypilot.io/retry-policy` annotation is unusable; None when absent or valid."""
    try:
        parse_retry_policy(job)
    except ValueError as error:
        return str(error)
    return None


# ---- the decision -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPlan:
    """What follows a failed attempt: retried or not, after `delay`, on the same RayCluster or a new one."""

    failure: FailureClass
    retry: bool
    delay: timedelta = timedelta(0)
    same_cluster: bool = False


def backoff_delay(backoff: Backoff, retry_number: int) -> timedelta:
    """The wait before retry `retry_number` (1 = the first retry)."""
    if backoff.initial <= timedelta(0):
        return timedelta(0)
    delay = backoff.initial * (backoff.factor ** max(retry_number - 1, 0))
    return min(delay, backoff.max) if backoff.max is not None else delay


def plan_retry(policy: RetryPolicy, failed: RayJobStatus, error_type: str) -> RetryPlan:
    """For an attempt that just failed (`failed.failed` counts it already): the policy of its class.
    `retry` is only the class's verdict: the caller still applies backoffLimit."""
    failure = classify_failure(failed, error_type)
    chosen = policy.for_class(failure)
    retry = chosen.retry if chosen.retry is not None else failed.reason not in NEVER_RETRIED_REASONS
    if not retry or failed.job_deployment_status != JobDeploymentStatus.FAILED:
        return RetryPlan(failure, retry=False)
    return RetryPlan(failure, True, backoff_delay(chosen.backoff, failed.failed), chosen.same_cluster)
