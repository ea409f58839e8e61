"""KubeRay's ValidateRayClusterSpec, as the RayJob and RayService validations embed it.

Each check returns KubeRay's message for the first problem it finds, in KubeRay's order, or None.
"""

from __future__ import annotations

from collections.abc import Mapping

from models.features import FeatureGates
from models.formats import (
    label_value_errors,
    parse_generic_version,
    qualified_name_errors,
    version_less_than,
)
from models.naming import (
    ANNOTATION_EXTERNAL_STORAGE_NAMESPACE,
    ANNOTATION_FT_ENABLED,
    MANAGED_BY_KUBERAY,
    MANAGED_BY_MULTIKUEUE,
)
from models.podtemplate import Container
from models.raycluster import AuthMode, AutoscalerVersion, RayClusterSpec, WorkerGroupSpec
from models.validation.raycluster_options import (
    env_names,
    gcs_fault_tolerance_backend_error,
    history_server_error,
    network_policy_error,
    tls_options_error,
)

__all__ = [
    "CEL_MANAGED_BY_IMMUTABLE",
    "CEL_MANAGED_BY_VALUE",
    "carried_cluster_spec_error",
    "is_autoscaling_enabled",
    "is_k8s_token_auth_enabled",
    "managed_by_value_error",
    "validate_created_cluster",
    "validate_raycluster_spec",
]

RAY_REDIS_ADDRESS = "RAY_REDIS_ADDRESS"
REDIS_PASSWORD = "REDIS_PASSWORD"
REDIS_USERNAME = "REDIS_USERNAME"
RAY_ENABLE_AUTOSCALER_V2 = "RAY_enable_autoscaler_v2"
KUBERAY_GEN_AUTOSCALER_START_CMD = "KUBERAY_GEN_AUTOSCALER_START_CMD"
CEL_MANAGED_BY_VALUE = (
    f"the managedBy field value must be either '{MANAGED_BY_KUBERAY}' or '{MANAGED_BY_MULTIKUEUE}'"
)
CEL_MANAGED_BY_IMMUTABLE = "the managedBy field is immutable"
_RAY_START_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")
_AUTH_MIN_RAY_VERSION = (2, 52, 0)
_K8S_AUTH_MIN_RAY_VERSION = (2, 55, 0)
_PRIORITY_MIN_RAY_VERSION = (2, 56, 0)


def managed_by_value_error(managed_by: str | None) -> str | None:
    """The CRD's CEL rule on every managedBy field (RayJob, RayService and their RayCluster specs)."""
    if managed_by is not None and managed_by not in (MANAGED_BY_KUBERAY, MANAGED_BY_MULTIKUEUE):
        return CEL_MANAGED_BY_VALUE
    return None


# ---- small readers over the models ----------------------------------------------------------------


def is_autoscaling_enabled(spec: RayClusterSpec | None) -> bool:
    return spec is not None and spec.enable_in_tree_autoscaling is True


def _is_autoscaling_v2(spec: RayClusterSpec) -> bool:
    options = spec.autoscaler_options
    return options is not None and options.version == AutoscalerVersion.V2


def is_k8s_token_auth_enabled(spec: RayClusterSpec | None) -> bool:
    return (
        spec is not None and spec.auth_options is not None and spec.auth_options.enable_k8s_token_auth is True
    )


def _env_value(container: Container, name: str) -> str | None:
    """Value of the first env var with that name: "" when it has no literal value, None when absent."""
    for var in container.env:
        if var.name == name:
            return var.value or ""
    return None


def _head_container(spec: RayClusterSpec) -> Container:
    return spec.head_group_spec.template.spec.containers[0]


def _autoscaler_v2_env_on(spec: RayClusterSpec) -> bool:
    return _env_value(_head_container(spec), RAY_ENABLE_AUTOSCALER_V2) in ("1", "true")


def _is_gcs_fault_tolerance_enabled(spec: RayClusterSpec, annotations: Mapping[str, str]) -> bool:
    return (
        annotations.get(ANNOTATION_FT_ENABLED, "").lower() == "true"
        or spec.gcs_fault_tolerance_options is not None
    )


def _restart_policy_not_never(policy: str | None) -> bool:
    return policy not in (None, "", "Never")


# ---- per-group checks -----------------------------------------------------------------------------


def _group_resources_error(
    group: str, ray_start_params: Mapping[str, str], resources: Mapping[str, str]
) -> str | None:
    if any(ray_start_params.get(key, "") != "" for key in _RAY_START_RESOURCE_PARAMS) and resources:
        return (
            f"resource fields should not be set in both rayStartParams and Resources for {group} group; "
            "please use only one"
        )
    return None


def _group_labels_error(
    group: str, ray_start_params: Mapping[str, str], labels: Mapping[str, str]
) -> str | None:
    if "labels" in ray_start_params:
        return (
            f"rayStartParams['labels'] is not supported for {group} group; "
            "please use the top-level Labels field instead"
        )
    problems: list[str] = []
    for key, value in labels.items():
        problems += [
            f"invalid label key for {group} group: '{key}', error: {e}" for e in qualified_name_errors(key)
        ]
        problems += [
            f"invalid label value for key '{key}' in {group} group: '{value}', error: {e}"
            for e in label_value_errors(value)
        ]
    return "; ".join(problems) if problems else None


def _requires_ray_version(spec: RayClusterSpec, minimum: tuple[int, ...], lead: str) -> str | None:
    """Shared shape of the "<lead> RayVersion ..." checks; `lead` is KubeRay's text up to "RayVersion"."""
    dotted = ".".join(str(part) for part in minimum)
    if spec.ray_version == "":
        return f"{lead} RayVersion was not specified. Ray version {dotted} or later is required"
    try:
        version = parse_generic_version(spec.ray_version)
    except ValueError as error:
        return f"{lead} RayVersion format is invalid: {spec.ray_version}, {error}"
    if version_less_than(version, minimum):
        return f"{lead} minimum Ray version is {dotted}, got {spec.ray_version}"
    return None


def _worker_group_error(group: WorkerGroupSpec, spec: RayClusterSpec) -> str | None:
    name = group.group_name
    if not group.template.spec.containers:
        return "workerGroupSpec should have at least one container"
    # min/maxReplicas always have values here (CRD defaults): KubeRay's "must set both" cannot fire.
    if group.min_replicas < 0:
        return f"worker group {name} has negative minReplicas {group.min_replicas}"
    if group.max_replicas < 0:
        return f"worker group {name} has negative maxReplicas {group.max_replicas}"
    if group.min_replicas > group.max_replicas:
        return (
            f"worker group {name} has minReplicas {group.min_replicas} "
            f"greater than maxReplicas {group.max_replicas}"
        )
    error = _group_resources_error(name, group.ray_start_params, group.resources)
    error = error or _group_labels_error(name, group.ray_start_params, group.labels)
    return error or _idle_timeout_error(group, spec) or _priority_error(group, spec)


def _idle_timeout_error(group: WorkerGroupSpec, spec: RayClusterSpec) -> str | None:
    if group.idle_timeout_seconds is None:
        return None
    if group.idle_timeout_seconds < 0:
        timeout = group.idle_timeout_seconds
        return f"worker group {group.group_name}: idleTimeoutSeconds must be non-negative, got {timeout}"
    if _is_autoscaling_v2(spec) or _autoscaler_v2_env_on(spec):
        return None
    return (
        f"worker group {group.group_name}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. "
        f"Please set .spec.autoscalerOptions.version to 'v2' (or set {RAY_ENABLE_AUTOSCALER_V2} environment "
        "variable to 'true' in the head pod if using KubeRay < 1.4.0)"
    )


def _priority_error(group: WorkerGroupSpec, spec: RayClusterSpec) -> str | None:
    if not group.priority:
        return None
    version_error = _requires_ray_version(
        spec, _PRIORITY_MIN_RAY_VERSION, f"worker group {group.group_name}: priority is set, but"
    )
    if version_error:
        return version_error
    if _is_autoscaling_v2(spec) or _autoscaler_v2_env_on(spec):
        return None
    return (
        f"worker group {group.group_name}: priority is set to {group.priority}, "
        "but autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled"
    )


# ---- cluster-wide checks --------------------------------------------------------------------------


def _gcs_fault_tolerance_error(
    spec: RayClusterSpec, annotations: Mapping[str, str], gates: FeatureGates
) -> str | None:
    options = spec.gcs_fault_tolerance_options
    head = _head_container(spec)
    head_env = set(env_names(head.env))
    if annotations.get(ANNOTATION_FT_ENABLED, "") != "" and options is not None:
        return (
            f"{ANNOTATION_FT_ENABLED} annotation and GcsFaultToleranceOptions are both set. "
            "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance"
        )
    if not _is_gcs_fault_tolerance_enabled(spec, annotations) and RAY_REDIS_ADDRESS in head_env:
        return (
            f"{RAY_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, "
            "but GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions "
            "to enable GCS fault tolerance"
        )
    if options is not None:
        instead = "GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions"
        if spec.head_group_spec.ray_start_params.get("redis-password", "") != "":
            return f"cannot set `redis-password` in rayStartParams when {instead}.RedisPassword instead"
        if REDIS_PASSWORD in head_env:
            return f"cannot set `REDIS_PASSWORD` env var in head Pod when {instead}.RedisPassword instead"
        if RAY_REDIS_ADDRESS in head_env:
            return f"cannot set `RAY_REDIS_ADDRESS` env var in head Pod when {instead}.RedisAddress instead"
        if annotations.get(ANNOTATION_EXTERNAL_STORAGE_NAMESPACE, "") != "":
            return (
                f"cannot set `{ANNOTATION_EXTERNAL_STORAGE_NAMESPACE}` annotation when "
                f"{instead}.ExternalStorageNamespace instead"
            )
        volumes = list(spec.head_group_spec.template.spec.volumes)
        error = gcs_fault_tolerance_backend_error(options, head, volumes, gates)
        if error:
            return error
    if spec.head_group_spec.ray_start_params.get("redis-username", "") != "" or REDIS_USERNAME in head_env:
        return (
            "cannot set redis username in rayStartParams or environment variables"
            " - use GcsFaultToleranceOptions.RedisUsername instead"
        )
    return None


def _autoscaler_error(spec: RayClusterSpec, gates: FeatureGates) -> str | None:
    if not gates.ray_job_deletion_policy:
        for group in spec.worker_group_specs:
            if group.suspend is True:
                return (
                    f"worker group {group.group_name} can be suspended only when the RayJobDeletionPolicy "
                    "feature gate is enabled"
                )
    head = _head_container(spec)
    if not is_autoscaling_enabled(spec):
        value = _env_value(head, RAY_ENABLE_AUTOSCALER_V2)
        if value in ("1", "true"):
            return (
                f"environment variable {RAY_ENABLE_AUTOSCALER_V2} cannot be set to '{value}' when "
                "enableInTreeAutoscaling is false. "
                "Please set enableInTreeAutoscaling: true to use autoscaler v2"
            )
    else:
        for group in spec.worker_group_specs:
            if group.suspend is True:
                return f"worker group {group.group_name} cannot be suspended with Autoscaler enabled"
        options = spec.autoscaler_options
        if (
            options is not None
            and options.version is not None
            and _env_value(head, RAY_ENABLE_AUTOSCALER_V2) is not None
        ):
            return (
                "both .spec.autoscalerOptions.version and head Pod env var "
                f"{RAY_ENABLE_AUTOSCALER_V2} are set, please only use the former"
            )
        if _is_autoscaling_v2(spec):
            if _restart_policy_not_never(spec.head_group_spec.template.spec.restart_policy):
                return "restartPolicy for head Pod should be Never or unset when using autoscaler V2"
            for group in spec.worker_group_specs:
                if _restart_policy_not_never(group.template.spec.restart_policy):
                    return (
                        f"restartPolicy for worker group {group.group_name} should be Never or unset "
                        "when using autoscaler V2"
                    )
    options = spec.autoscaler_options
    if options is not None and options.idle_timeout_seconds is not None and options.idle_timeout_seconds < 0:
        return (
            f"autoscalerOptions.idleTimeoutSeconds must be non-negative, got {options.idle_timeout_seconds}"
        )
    if options is not None and KUBERAY_GEN_AUTOSCALER_START_CMD in env_names(options.env):
        return (
            f"autoscalerOptions.env must not contain {KUBERAY_GEN_AUTOSCALER_START_CMD}: "
            "it is managed by KubeRay and injected automatically into the autoscaler container"
        )
    return None


def _auth_error(spec: RayClusterSpec) -> str | None:
    auth = spec.auth_options
    k8s_auth = is_k8s_token_auth_enabled(spec)
    if auth is None or auth.mode != AuthMode.TOKEN:
        if k8s_auth:
            return "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'"
        return None
    error = _requires_ray_version(spec, _AUTH_MIN_RAY_VERSION, "authOptions.mode is 'token' but")
    if error:
        return error
    if k8s_auth:
        if version_less_than(parse_generic_version(spec.ray_version), _K8S_AUTH_MIN_RAY_VERSION):
            return (
                "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, "
                f"got {spec.ray_version}"
            )
        if auth.secret_name:
            return "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set"
    return None


def validate_raycluster_spec(
    spec: RayClusterSpec, annotations: Mapping[str, str], gates: FeatureGates
) -> str | None:
    """KubeRay's ValidateRayClusterSpec: the first problem's message, or None.

    `annotations` are those of the owning object (RayJob/RayService), as KubeRay passes them.
    """
    head = spec.head_group_spec
    if not head.template.spec.containers:
        return "headGroupSpec should have at least one container"
    error = _group_resources_error("Head", head.ray_start_params, head.resources)
    error = error or _group_labels_error("Head", head.ray_start_params, head.labels)
    for group in spec.worker_group_specs:
        error = error or _worker_group_error(group, spec)
    return (
        error
        or _gcs_fault_tolerance_error(spec, annotations, gates)
        or _autoscaler_error(spec, gates)
        or history_server_error(spec, gates)
        or _auth_error(spec)
        or network_policy_error(spec, gates)
        or tls_options_error(spec, gates)
    )


def carried_cluster_spec_error(
    spec: RayClusterSpec, owner_kind: str, annotations: Mapping[str, str], gates: FeatureGates
) -> str | None:
    """What ValidateRayJobSpec and ValidateRayServiceSpec reject about the RayCluster spec their object
    carries: K8s token auth (supported for neither), then ValidateRayClusterSpec. Without the spec prefix."""
    if is_k8s_token_auth_enabled(spec):
        return f"K8s token auth mode is currently not supported for {owner_kind}"
    return validate_raycluster_spec(spec, annotations, gates)


def validate_created_cluster(spec: RayClusterSpec, creator_kind: str) -> str | None:
    """What KubeRay's RayCluster side rejects on a cluster a RayJob/RayService creates.

    KubeRay accepts such a RayJob/RayService and then fails on the RayCluster forever; raypilot
    refuses the manifest instead. Worker group names must be unique (KubeRay's RayCluster webhook).
    """
    if spec.upgrade_strategy is not None and spec.upgrade_strategy.type is not None:
        return f"upgradeStrategy cannot be set when RayCluster is created by {creator_kind}"
    seen: set[str] = set()
    for index, group in enumerate(spec.worker_group_specs):
        if group.group_name in seen:
            return (
                f"spec.workerGroupSpecs[{index}]: worker group names must be unique "
                f"(duplicate groupName {group.group_name!r})"
            )
        seen.add(group.group_name)
    return None
