"""KubeRay RayService (ray.io/v1): spec, upgrade strategy, status, condition types and reasons."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field

from models.base import Int32, Int64, SpecModel, Time, known_member
from models.meta import Condition
from models.raycluster import RayClusterSpec, RayClusterStatus, RayObject

DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS = 60


class RayServiceUpgradeType(StrEnum):
    NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE = "NewClusterWithIncrementalUpgrade"
    NEW_CLUSTER = "NewCluster"
    NONE = "None"


class RayServiceConditionType(StrEnum):
    READY = "Ready"
    UPGRADE_IN_PROGRESS = "UpgradeInProgress"
    ROLLBACK_IN_PROGRESS = "RollbackInProgress"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"


class RayServiceConditionReason(StrEnum):
    INITIALIZING = "Initializing"
    INITIALIZING_TIMEOUT = "InitializingTimeout"
    ZERO_SERVE_ENDPOINTS = "ZeroServeEndpoints"
    NON_ZERO_SERVE_ENDPOINTS = "NonZeroServeEndpoints"
    BOTH_ACTIVE_PENDING_CLUSTERS_EXIST = "BothActivePendingClustersExist"
    NO_PENDING_CLUSTER = "NoPendingCluster"
    NO_ACTIVE_CLUSTER = "NoActiveCluster"
    VALIDATION_FAILED = "ValidationFailed"
    DESIRED_CLUSTER_SPEC_CHANGED = "DesiredClusterSpecChanged"
    SUSPEND_REQUESTED = "SuspendRequested"
    SUSPEND_IN_PROGRESS = "SuspendInProgress"
    SUSPEND_COMPLETE = "SuspendComplete"
    RAY_SERVICE_RESUMED = "RayServiceResumed"


class ApplicationStatus(StrEnum):
    """Ray Serve application statuses, as the dashboard reports them."""

    NOT_STARTED = "NOT_STARTED"
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DELETING = "DELETING"
    UNHEALTHY = "UNHEALTHY"


class DeploymentStatus(StrEnum):
    """Ray Serve deployment statuses, as the dashboard reports them."""

    UPDATING = "UPDATING"
    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"


SERVICE_STATUS_RUNNING = "Running"


class ClusterUpgradeOptions(SpecModel):
    """Incremental-upgrade tuning. The three fields without defaults are required keys in the CRD."""

    max_surge_percent: Int32 = 100
    step_size_percent: Int32 | None
    interval_seconds: Int32 | None
    gateway_class_name: str


class RayServiceUpgradeStrategy(SpecModel):
    # The CRD leaves the type open; KubeRay's controller rejects unknown values with its own message.
    type: Annotated[RayServiceUpgradeType | str, known_member(RayServiceUpgradeType)] | None = None
    cluster_upgrade_options: ClusterUpgradeOptions | None = None


class RayServiceSpec(SpecModel):
    ray_cluster_deletion_delay_seconds: Int32 | None = None
    service_unhealthy_second_threshold: Int32 | None = None  # deprecated, unused
    deployment_unhealthy_second_threshold: Int32 | None = None  # deprecated, unused
    serve_service: dict[str, Any] | None = None
    upgrade_strategy: RayServiceUpgradeStrategy | None = None
    managed_by: str | None = None
    # Ray Serve multi-application config (YAML text), sent to the dashboard as is.
    serve_config_v2: str = Field(default="", alias="serveConfigV2")
    ray_cluster_config: RayClusterSpec
    exclude_head_pod_from_serve_svc: bool = False
    suspend: bool = False


class ServeDeploymentStatus(SpecModel):
    status: str = ""
    message: str = ""


class AppStatus(SpecModel):
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] = Field(default_factory=dict)
    status: str = ""
    message: str = ""


class RayServiceStatus(SpecModel):
    """One side of a RayService: the active or the pending cluster and what it serves."""

    application_statuses: dict[str, AppStatus] = Field(default_factory=dict)
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None
    last_traffic_migrated_time: Time | None = None
    ray_cluster_name: str = ""
    ray_cluster_status: RayClusterStatus = Field(default_factory=RayClusterStatus)


class RayServiceStatuses(SpecModel):
    """The RayService's status object (KubeRay's name for it is plural)."""

    conditions: list[Condition] = Field(default_factory=list)
    last_update_time: Time | None = None
    # Deprecated by KubeRay: "Running" iff the Ready condition is True, else "".
    service_status: Literal["Running", ""] = ""
    active_service_status: RayServiceStatus = Field(default_factory=RayServiceStatus)
    pending_service_status: RayServiceStatus = Field(default_factory=RayServiceStatus)
    num_serve_endpoints: Int32 = 0
    observed_generation: Int64 = 0


class RayService(RayObject):
    kind: Literal["RayService"] = "RayService"
    spec: RayServiceSpec
    status: RayServiceStatuses = Field(default_factory=RayServiceStatuses)
