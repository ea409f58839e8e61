"""KubeRay RayJob (ray.io/v1): spec, deletion strategy, status and the enumerations around them."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from models.base import Int32, Int64, SpecModel, Time
from models.meta import Condition
from models.podtemplate import PodTemplateSpec
from models.raycluster import RayClusterSpec, RayClusterStatus, RayObject


class JobSubmissionMode(StrEnum):
    K8S_JOB_MODE = "K8sJobMode"
    HTTP_MODE = "HTTPMode"
    INTERACTIVE_MODE = "InteractiveMode"
    SIDECAR_MODE = "SidecarMode"


class JobStatus(StrEnum):
    """The Ray job's own status, as the Ray Dashboard reports it ("" before it is known)."""

    NEW = ""
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class JobDeploymentStatus(StrEnum):
    """Where the RayJob is in its lifecycle (cluster, submission, retries, suspension)."""

    NEW = ""
    INITIALIZING = "Initializing"
    RUNNING = "Running"
    COMPLETE = "Complete"
    FAILED = "Failed"
    VALIDATION_FAILED = "ValidationFailed"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    RETRYING = "Retrying"
    WAITING = "Waiting"


class JobFailedReason(StrEnum):
    SUBMISSION_FAILED = "SubmissionFailed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    PRE_RUNNING_DEADLINE_EXCEEDED = "PreRunningDeadlineExceeded"
    APP_FAILED = "AppFailed"
    TRANSITION_GRACE_PERIOD_EXCEEDED = "JobDeploymentStatusTransitionGracePeriodExceeded"
    JOB_STATUS_CHECK_TIMEOUT_EXCEEDED = "JobStatusCheckTimeoutExceeded"
    VALIDATION_FAILED = "ValidationFailed"


class DeletionPolicyType(StrEnum):
    DELETE_CLUSTER = "DeleteCluster"
    DELETE_WORKERS = "DeleteWorkers"
    DELETE_SELF = "DeleteSelf"
    DELETE_NONE = "DeleteNone"


TERMINAL_JOB_STATUSES = frozenset({JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED})
TERMINAL_JOB_DEPLOYMENT_STATUSES = frozenset({JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED})


def is_job_terminal(status: JobStatus) -> bool:
    """Whether the Ray job has finished (mirrors Ray's JobStatus.is_terminal)."""
    return status in TERMINAL_JOB_STATUSES


def is_job_deployment_terminal(status: JobDeploymentStatus) -> bool:
    return status in TERMINAL_JOB_DEPLOYMENT_STATUSES


class DeletionPolicy(SpecModel):
    """Legacy single-stage policy (onSuccess / onFailure); deprecated by KubeRay in favour of rules."""

    policy: DeletionPolicyType | None = None


class DeletionCondition(SpecModel):
    """When a deletion rule fires: exactly one of the two statuses (checked by validation), plus a TTL."""

    # The CRD only admits these values here.
    job_status: Literal[JobStatus.SUCCEEDED, JobStatus.FAILED] | None = None
    job_deployment_status: Literal[JobDeploymentStatus.FAILED] | None = None
    ttl_seconds: Int32 = 0


class DeletionRule(SpecModel):
    policy: DeletionPolicyType
    condition: DeletionCondition


class DeletionStrategy(SpecModel):
    """Either legacy onSuccess + onFailure, or deletionRules; the exclusivity rules live in validation."""

    on_success: DeletionPolicy | None = None
    on_failure: DeletionPolicy | None = None
    deletion_rules: list[DeletionRule] = Field(default_factory=list)


class SubmitterConfig(SpecModel):
    # None means KubeRay's default of 2 submitter retries.
    backoff_limit: Int32 | None = None


class RayJobSpec(SpecModel):
    """Defaults are KubeRay's CRD defaults; fields KubeRay leaves nil stay None."""

    active_deadline_seconds: Int32 | None = None
    backoff_limit: Int32 = 0
    ray_cluster_spec: RayClusterSpec | None = None
    submitter_pod_template: PodTemplateSpec | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    cluster_selector: dict[str, str] = Field(default_factory=dict)
    submitter_config: SubmitterConfig | None = None
    managed_by: str | None = None
    deletion_strategy: DeletionStrategy | None = None
    entrypoint: str = ""
    runtime_env_yaml: str = Field(default="", alias="runtimeEnvYAML")
    job_id: str = ""
    submission_mode: JobSubmissionMode = JobSubmissionMode.K8S_JOB_MODE
    # A JSON object as a string, e.g. '{"Custom_1": 1}', forwarded to the submission as is.
    entrypoint_resources: str = ""
    entrypoint_num_cpus: float = 0.0
    entrypoint_num_gpus: float = 0.0
    ttl_seconds_after_finished: Int32 = 0
    pre_running_deadline_seconds: Int32 | None = None
    shutdown_after_job_finishes: bool = False
    suspend: bool = False


class RayJobInfo(SpecModel):
    """The Ray job's own start and end, from the Ray Dashboard (serialized as `rayJobInfo`)."""

    start_time: Time | None = None
    end_time: Time | None = None


def _empty_reason_is_none(value: object) -> object:
    # Go writes no reason as "" (or omits it); both mean "no failure reason".
    return None if value == "" else value


class RayJobStatus(SpecModel):
    ray_job_info: RayJobInfo = Field(default_factory=RayJobInfo)
    job_id: str = ""
    ray_cluster_name: str = ""
    dashboard_url: str = Field(default="", alias="dashboardURL")
    job_status: JobStatus = JobStatus.NEW
    job_deployment_status: JobDeploymentStatus = JobDeploymentStatus.NEW
    reason: Annotated[JobFailedReason | None, BeforeValidator(_empty_reason_is_none)] = None
    message: str = ""
    start_time: Time | None = None
    end_time: Time | None = None
    succeeded: Int32 = 0
    failed: Int32 = 0
    ray_cluster_status: RayClusterStatus = Field(default_factory=RayClusterStatus)
    job_status_check_failure_start_time: Time | None = None
    observed_generation: Int64 = 0
    # raypilot's own conditions (KubeRay's RayJob has none); empty, and so absent from the JSON, unless an
    # extension has something to say (e.g. RayClusterLeftBehind).
    conditions: list[Condition] = Field(default_factory=list)


class RayJob(RayObject):
    kind: Literal["RayJob"] = "RayJob"
    spec: RayJobSpec = Field(default_factory=RayJobSpec)
    status: RayJobStatus = Field(default_factory=RayJobStatus)
