"""KubeRay RayCluster (ray.io/v1): the spec RayJob and RayService embed, and the status its controller writes.

Enumerations the CRD declares are enforced; rules KubeRay checks in its controller are left to validation.
Kubernetes types raypilot never reads (Service, SecurityContext, NetworkPolicy rules, ...) are kept as
plain JSON objects so they pass through unchanged.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from models.base import (
    INT32_MAX,
    ForeignStatusModel,
    Int32,
    Int64,
    Quantity,
    SpecModel,
    Time,
    known_member,
)
from models.meta import Condition, ObjectMeta
from models.podtemplate import PodTemplateSpec, ResourceRequirements

RAY_API_VERSION: Final = "ray.io/v1"


class RayObject(SpecModel):
    """What every ray.io/v1 object starts with. A kind's model narrows `kind` to its own name (a Literal
    with that default) and adds its `spec` and `status`; the fields keep this order in dumps."""

    api_version: Literal["ray.io/v1"] = RAY_API_VERSION
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @classmethod
    def kind_name(cls) -> str:
        """The kind this model parses, e.g. "RayCluster"."""
        return str(cls.model_fields["kind"].default)


class RayClusterUpgradeType(StrEnum):
    RECREATE = "Recreate"
    NONE = "None"


class AuthMode(StrEnum):
    DISABLED = "disabled"
    TOKEN = "token"


class GcsFaultToleranceBackend(StrEnum):
    REDIS = "redis"
    ROCKSDB = "rocksdb"


class GcsStorageDeletionPolicy(StrEnum):
    DELETE_WITH_CLUSTER = "DeleteWithCluster"
    RETAIN = "Retain"


class UpscalingMode(StrEnum):
    DEFAULT = "Default"
    AGGRESSIVE = "Aggressive"
    CONSERVATIVE = "Conservative"


class AutoscalerVersion(StrEnum):
    V1 = "v1"
    V2 = "v2"


class NetworkPolicyMode(StrEnum):
    DENY_ALL = "DenyAll"
    DENY_ALL_INGRESS = "DenyAllIngress"
    DENY_ALL_EGRESS = "DenyAllEgress"


class IngressPathType(StrEnum):
    EXACT = "Exact"
    PREFIX = "Prefix"
    IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


class ClusterState(StrEnum):
    READY = "ready"
    FAILED = "failed"  # deprecated in KubeRay, still readable
    SUSPENDED = "suspended"


class RayClusterConditionType(StrEnum):
    PROVISIONED = "RayClusterProvisioned"
    HEAD_POD_READY = "HeadPodReady"
    REPLICA_FAILURE = "ReplicaFailure"
    SUSPENDING = "RayClusterSuspending"
    SUSPENDED = "RayClusterSuspended"


class RayClusterUpgradeStrategy(SpecModel):
    type: RayClusterUpgradeType | None = None


class AuthOptions(SpecModel):
    enable_k8s_token_auth: bool | None = Field(default=None, alias="enableK8sTokenAuth")
    secret_name: str | None = None
    mode: AuthMode | None = None


class RedisCredential(SpecModel):
    value_from: dict[str, Any] | None = None
    value: str = ""


class GcsEmbeddedStorage(SpecModel):
    claim_name: str = ""
    size: Quantity | None = None
    storage_class_name: str | None = None
    access_modes: list[str] = Field(default_factory=list)
    sub_path: str = ""
    deletion_policy: GcsStorageDeletionPolicy | None = None


class GcsFaultToleranceOptions(SpecModel):
    backend: GcsFaultToleranceBackend | None = None
    redis_username: RedisCredential | None = None
    redis_password: RedisCredential | None = None
    external_storage_namespace: str = ""
    redis_address: str = ""
    storage: GcsEmbeddedStorage | None = None


class CollectorOptions(SpecModel):
    image: str | None = None
    image_pull_policy: str | None = None
    resources: ResourceRequirements | None = None
    env: list[dict[str, Any]] = Field(default_factory=list)


class HistoryServerOptions(SpecModel):
    collector_options: CollectorOptions | None = None


class NetworkPolicyRules(SpecModel):
    ingress_rules: list[dict[str, Any]] = Field(default_factory=list)
    egress_rules: list[dict[str, Any]] = Field(default_factory=list)


class WorkerGroupNetworkPolicyRules(NetworkPolicyRules):
    group_name: str


class NetworkPolicyConfig(SpecModel):
    mode: NetworkPolicyMode = NetworkPolicyMode.DENY_ALL
    head: NetworkPolicyRules | None = None
    worker: NetworkPolicyRules | None = None
    worker_groups: list[WorkerGroupNetworkPolicyRules] = Field(default_factory=list)


class TLSOptions(SpecModel):
    enabled: bool | None = None


class AutoscalerOptions(SpecModel):
    resources: ResourceRequirements | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    security_context: dict[str, Any] | None = None
    idle_timeout_seconds: Int32 | None = None
    upscaling_mode: UpscalingMode | None = None
    version: AutoscalerVersion | None = None
    env: list[dict[str, Any]] = Field(default_factory=list)
    env_from: list[dict[str, Any]] = Field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = Field(default_factory=list)
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)


class IngressOptions(SpecModel):
    host: str | None = None
    path: str | None = None
    path_type: IngressPathType | None = None
    tls: list[dict[str, Any]] = Field(default_factory=list)


class HeadGroupSpec(SpecModel):
    template: PodTemplateSpec
    head_service: dict[str, Any] | None = None
    enable_ingress: bool | None = None
    ingress_options: IngressOptions | None = None
    resources: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    ray_start_params: dict[str, str] = Field(default_factory=dict)
    service_type: str = ""


class ScaleStrategy(SpecModel):
    workers_to_delete: list[str] = Field(default_factory=list)


class WorkerGroupSpec(SpecModel):
    """One group of worker pods. Defaults are KubeRay's CRD defaults."""

    suspend: bool | None = None
    group_name: str
    replicas: Int32 = 0
    min_replicas: Int32 = 0
    max_replicas: Int32 = INT32_MAX
    idle_timeout_seconds: Int32 | None = None
    priority: Int32 = 0
    resources: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    ray_start_params: dict[str, str] = Field(default_factory=dict)
    template: PodTemplateSpec
    scale_strategy: ScaleStrategy = Field(default_factory=ScaleStrategy)
    num_of_hosts: Int32 = 1


class RayClusterSpec(SpecModel):
    upgrade_strategy: RayClusterUpgradeStrategy | None = None
    auth_options: AuthOptions | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    autoscaler_options: AutoscalerOptions | None = None
    head_service_annotations: dict[str, str] = Field(default_factory=dict)
    enable_in_tree_autoscaling: bool | None = None
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = None
    history_server_options: HistoryServerOptions | None = None
    network_policy: NetworkPolicyConfig | None = None
    tls_options: TLSOptions | None = Field(default=None, alias="tlsOptions")
    head_group_spec: HeadGroupSpec
    ray_version: str = ""
    worker_group_specs: list[WorkerGroupSpec] = Field(default_factory=list)


class HeadInfo(ForeignStatusModel):
    pod_ip: str = Field(default="", alias="podIP")
    service_ip: str = Field(default="", alias="serviceIP")
    pod_name: str = ""
    service_name: str = ""


class RayClusterStatus(ForeignStatusModel):
    """What KubeRay's RayCluster controller (or the sandbox) writes; unknown keys are ignored."""

    state: Annotated[ClusterState | str, known_member(ClusterState)] = ""
    desired_cpu: Quantity | None = Field(default=None, alias="desiredCPU")
    desired_memory: Quantity | None = None
    desired_gpu: Quantity | None = Field(default=None, alias="desiredGPU")
    desired_tpu: Quantity | None = Field(default=None, alias="desiredTPU")
    last_update_time: Time | None = None
    state_transition_times: dict[str, Time] = Field(default_factory=dict)
    endpoints: dict[str, str] = Field(default_factory=dict)
    head: HeadInfo = Field(default_factory=HeadInfo)
    reason: str = ""
    conditions: list[Condition] = Field(default_factory=list)
    ready_worker_replicas: Int32 = 0
    available_worker_replicas: Int32 = 0
    desired_worker_replicas: Int32 = 0
    min_worker_replicas: Int32 = 0
    max_worker_replicas: Int32 = 0
    observed_generation: Int64 = 0


class RayCluster(RayObject):
    kind: Literal["RayCluster"] = "RayCluster"
    spec: RayClusterSpec
    status: RayClusterStatus = Field(default_factory=RayClusterStatus)
