"""RayService validation: the CRD's CEL rules, then KubeRay's ValidateRayServiceMetadata /
ValidateRayServiceSpec (utils/validation.go) in its order, then what the RayCluster side would reject."""

from __future__ import annotations

from collections.abc import Mapping

from models.features import FeatureGates
from models.formats import dns1035_label_errors, go_atoi, go_list, parse_go_duration_seconds
from models.meta import ObjectMeta
from models.naming import ANNOTATION_INITIALIZING_TIMEOUT, KIND_RAYSERVICE, MAX_RAYSERVICE_NAME_LENGTH
from models.notify import notify_error
from models.rayservice import RayService, RayServiceSpec, RayServiceUpgradeType
from models.rayservice_annotations import rayservice_annotation_problem
from models.rollout import rollout_error, rollout_strategy_error
from models.traffic_refs import traffic_refs_problem
from models.validation.raycluster import (
    carried_cluster_spec_error,
    is_autoscaling_enabled,
    managed_by_value_error,
    validate_created_cluster,
)

__all__ = [
    "initializing_timeout_seconds",
    "is_incremental_upgrade_enabled",
    "validate_cluster_upgrade_options",
    "validate_rayservice",
    "validate_rayservice_metadata",
    "validate_rayservice_spec",
]

_DEFAULT_GATES = FeatureGates()
_METADATA_INVALID = "The RayService metadata is invalid: "
_SPEC_INVALID = "The RayService spec is invalid: "
_INCREMENTAL = RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE


def is_incremental_upgrade_enabled(spec: RayServiceSpec, gates: FeatureGates) -> bool:
    """KubeRay's IsIncrementalUpgradeEnabled: the gate is on and the type asks for it."""
    strategy = spec.upgrade_strategy
    return gates.ray_service_incremental_upgrade and strategy is not None and strategy.type == _INCREMENTAL


def _initializing_timeout_error(annotations: Mapping[str, str]) -> str | None:
    key = ANNOTATION_INITIALIZING_TIMEOUT
    value = annotations.get(key, "")
    if value == "":
        return None
    try:
        seconds: float = parse_go_duration_seconds(value)
    except ValueError:
        integer = go_atoi(value)
        if integer is None:
            return (
                f"annotation {key} has invalid format: {value}. "
                "Expected Go duration format (e.g., '5m', '1h') or positive integer seconds"
            )
        if integer <= 0:
            return f"annotation {key} must be a positive integer (seconds), got: {value}"
        return None
    if seconds <= 0:
        return f"annotation {key} must be a positive duration, got: {value}"
    return None


def initializing_timeout_seconds(annotations: Mapping[str, str]) -> float | None:
    """The ray.io/initializing-timeout annotation in seconds (Go duration or integer seconds), if valid."""
    value = annotations.get(ANNOTATION_INITIALIZING_TIMEOUT, "")
    if value == "" or _initializing_timeout_error(annotations) is not None:
        return None
    try:
        return parse_go_duration_seconds(value)
    except ValueError:
        return float(go_atoi(value) or 0)


def validate_rayservice_metadata(metadata: ObjectMeta) -> str | None:
    if len(metadata.name) > MAX_RAYSERVICE_NAME_LENGTH:
        limit = MAX_RAYSERVICE_NAME_LENGTH
        return _METADATA_INVALID + f"RayService name should be no more than {limit} characters"
    errors = dns1035_label_errors(metadata.name)
    if errors:
        return _METADATA_INVALID + f"RayService name should be a valid DNS1035 label: {go_list(errors)}"
    error = _initializing_timeout_error(metadata.annotations)
    if error:
        return _METADATA_INVALID + "RayService annotations is invalid: " + error
    return None


def validate_cluster_upgrade_options(service: RayService) -> str | None:
    """KubeRay's ValidateClusterUpgradeOptions (for NewClusterWithIncrementalUpgrade), unprefixed."""
    spec = service.spec
    if not is_autoscaling_enabled(spec.ray_cluster_config):
        return "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade"
    options = spec.upgrade_strategy.cluster_upgrade_options if spec.upgrade_strategy else None
    if options is None:
        return "ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade"
    if not 0 <= options.max_surge_percent <= 100:
        return "maxSurgePercent must be between 0 and 100"
    step = options.step_size_percent
    if step is None or not 0 <= step <= 100:
        return "stepSizePercent must be between 0 and 100"
    if step > options.max_surge_percent:
        return "stepSizePercent must be less than or equal to maxSurgePercent"
    if options.interval_seconds is None or options.interval_seconds <= 0:
        return "intervalSeconds must be greater than 0"
    if options.gateway_class_name == "":
        return "gatewayClassName is required for NewClusterWithIncrementalUpgrade"
    return None


def validate_rayservice_spec(service: RayService, gates: FeatureGates = _DEFAULT_GATES) -> str | None:
    """KubeRay's ValidateRayServiceSpec (controller side only), in its order."""
    spec = service.spec
    cluster = spec.ray_cluster_config
    error = carried_cluster_spec_error(cluster, KIND_RAYSERVICE, service.metadata.annotations, gates)
    if error:
        return _SPEC_INVALID + error
    head_service = cluster.head_group_spec.head_service or {}
    head_service_metadata = head_service.get("metadata")
    if isinstance(head_service_metadata, dict) and head_service_metadata.get("name"):
        return (
            _SPEC_INVALID + "spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set"
        )
    strategy = spec.upgrade_strategy
    if (
        strategy is not None
        and strategy.type is not None
        and strategy.type not in tuple(RayServiceUpgradeType)
    ):
        return _SPEC_INVALID + (
            f"Spec.UpgradeStrategy.Type value {strategy.type} is invalid, valid options are "
            f"{_INCREMENTAL}, {RayServiceUpgradeType.NEW_CLUSTER}, or {RayServiceUpgradeType.NONE}"
        )
    delay = spec.ray_cluster_deletion_delay_seconds
    if delay is not None and delay < 0:
        return (
            _SPEC_INVALID
            + f"Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got {delay}"
        )
    if is_incremental_upgrade_enabled(spec, gates):
        error = validate_cluster_upgrade_options(service)
        if error:
            return _SPEC_INVALID + error
    return None


def validate_rayservice(service: RayService, gates: FeatureGates = _DEFAULT_GATES) -> str | None:
    """Everything KubeRay (API server, then controller) would reject about this RayService, first error only.

    Order: CRD CEL rules (managedBy values), metadata, ValidateRayServiceSpec, then the RayCluster-side
    rules for the clusters this RayService creates.
    """
    spec = service.spec
    return (
        managed_by_value_error(spec.managed_by)
        or managed_by_value_error(spec.ray_cluster_config.managed_by)
        or validate_rayservice_metadata(service.metadata)
        or validate_rayservice_spec(service, gates)
        or validate_created_cluster(spec.ray_cluster_config, KIND_RAYSERVICE)
        # raypilot: the `raypilot.io/rollout` annotation, checked like the spec (models/rollout.py).
        or rollout_error(service.metadata.annotations)
        or rollout_strategy_error(service.metadata.annotations, is_incremental_upgrade_enabled(spec, gates))
        or rayservice_annotation_problem(service.metadata.annotations)
        or notify_error(service.metadata.annotations, KIND_RAYSERVICE)
        or traffic_refs_problem(service.metadata.annotations, is_incremental_upgrade_enabled(spec, gates))
    )
