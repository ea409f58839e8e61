"""The optional RayCluster features ValidateRayClusterSpec checks last: GCS fault tolerance, history
server collector, network policy and mTLS. Each returns KubeRay's message or None."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from models.features import FeatureGates
from models.formats import dns1123_label_errors, go_list, go_quote
from models.podtemplate import Container
from models.raycluster import (
    CollectorOptions,
    GcsFaultToleranceBackend,
    GcsFaultToleranceOptions,
    NetworkPolicyMode,
    RayClusterSpec,
)

__all__ = [
    "collector_options_error",
    "gcs_fault_tolerance_backend_error",
    "history_server_error",
    "network_policy_error",
    "tls_options_error",
]

RAY_GCS_STORAGE = "RAY_gcs_storage"
RAY_GCS_STORAGE_PATH = "RAY_gcs_storage_path"
GCS_STORAGE_VOLUME_NAME = "gcs-storage"
GCS_STORAGE_MOUNT_PATH = "/data/gcs"
COLLECTOR_CONTAINER_NAME = "ray-history-collector"
RAY_TLS_VOLUME_NAME = "ray-tls"
RAY_TLS_CERT_MOUNT_PATH = "/etc/ray/tls"
TLS_ENV_VARS = ("RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY", "RAY_TLS_CA_CERT")
COLLECTOR_MANAGED_ENV_VARS = (
    "POD_IP",
    "FQ_RAY_IP",
    "RAY_CLUSTER_NAME",
    "RAY_CLUSTER_NAMESPACE",
    "RAY_ROLE",
    "OWNER_KIND",
    "OWNER_NAME",
    "EVENTS_PORT",
)
STORAGE_BACKEND = "STORAGE_BACKEND"
AZURE_STORAGE_AUTH_MODE = "AZURE_STORAGE_AUTH_MODE"
AZURE_STORAGE_CONNECTION_STRING = "AZURE_STORAGE_CONNECTION_STRING"
AZURE_STORAGE_ACCOUNT_URL = "AZURE_STORAGE_ACCOUNT_URL"


def env_names(env: Iterable[Any]) -> list[str]:
    """Names of env vars given as models (with .name) or as plain JSON objects."""
    names: list[str] = []
    for var in env:
        name = var.get("name") if isinstance(var, dict) else getattr(var, "name", None)
        if isinstance(name, str):
            names.append(name)
    return names


def extra_list(model: Any, key: str) -> list[dict[str, Any]]:
    """A list field the pod models do not declare (kept by pydantic in model_extra), e.g. volumeMounts."""
    extra = getattr(model, "model_extra", None) or {}
    value = extra.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


# ---- GCS fault tolerance --------------------------------------------------------------------------


def gcs_fault_tolerance_backend_error(
    options: GcsFaultToleranceOptions,
    head: Container,
    head_volumes: list[dict[str, Any]],
    gates: FeatureGates,
) -> str | None:
    if options.backend != GcsFaultToleranceBackend.ROCKSDB:
        if options.storage is not None:
            return (
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - "
                "it only applies to the 'rocksdb' backend"
            )
        return None
    if not gates.gcs_fault_tolerance_embedded_storage:
        return (
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "
            "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"
        )
    redis_only = (
        ("RedisAddress", options.redis_address != ""),
        ("RedisUsername", options.redis_username is not None),
        ("RedisPassword", options.redis_password is not None),
        ("ExternalStorageNamespace", options.external_storage_namespace != ""),
    )
    for field, is_set in redis_only:
        if is_set:
            return f"cannot set GcsFaultToleranceOptions.{field} when backend is 'rocksdb'"
    storage = options.storage
    if (
        storage is not None
        and storage.claim_name
        and (storage.size is not None or storage.storage_class_name is not None or storage.access_modes)
    ):
        return (
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, "
            "and accessModes"
        )
    if {RAY_GCS_STORAGE, RAY_GCS_STORAGE_PATH} & set(env_names(head.env)):
        return (
            f"cannot set `{RAY_GCS_STORAGE}` or `{RAY_GCS_STORAGE_PATH}` env var in head Pod "
            "when the embedded GCS FT backend is used - these are managed by KubeRay"
        )
    for mount in extra_list(head, "volumeMounts"):
        if mount.get("mountPath") == GCS_STORAGE_MOUNT_PATH or mount.get("name") == GCS_STORAGE_VOLUME_NAME:
            return (
                f"cannot set a volume mount named {go_quote(GCS_STORAGE_VOLUME_NAME)} or mounted at "
                f"{GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT backend is used - "
                "it is managed by KubeRay"
            )
    if any(volume.get("name") == GCS_STORAGE_VOLUME_NAME for volume in head_volumes):
        return (
            f"cannot set a volume named {go_quote(GCS_STORAGE_VOLUME_NAME)} in the head Pod "
            "when the embedded GCS FT backend is used - it is managed by KubeRay"
        )
    return None


# ---- history server -------------------------------------------------------------------------------


def collector_options_error(options: CollectorOptions) -> str | None:
    if not options.image:
        return "historyServerOptions.collectorOptions.image must be set"
    env: dict[str, dict[str, Any]] = {}
    for var in options.env:
        if isinstance(var.get("name"), str):
            env[var["name"]] = var

    def has_value(name: str) -> bool:
        var = env.get(name)
        return var is not None and (bool(var.get("value")) or var.get("valueFrom") is not None)

    for name in COLLECTOR_MANAGED_ENV_VARS:
        if name in env:
            return (
                f"historyServerOptions.collectorOptions.env must not contain {name}: "
                "it is managed by KubeRay and injected automatically into the collector container"
            )
    backend = str(env.get(STORAGE_BACKEND, {}).get("value") or "")
    if not backend:
        return (
            f"{STORAGE_BACKEND} environment variable must be set with a literal string value in "
            "historyServerOptions.collectorOptions.env"
        )
    backend = backend.upper()
    required = {
        "GCS": ("GCS_BUCKET",),
        "S3": ("S3_REGION",),
        "ALIYUNOSS": ("OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION"),
    }
    for name in required.get(backend, ()):
        if not has_value(name):
            return f"{name} environment variable must be set when {STORAGE_BACKEND} is {backend}"
    if backend == "AZUREBLOB":
        return _azure_error(str(env.get(AZURE_STORAGE_AUTH_MODE, {}).get("value") or ""), has_value)
    return None


def _azure_error(raw_auth_mode: str, has_value: Any) -> str | None:
    auth_mode = raw_auth_mode.strip().lower()
    prefix = f"{STORAGE_BACKEND} is AZUREBLOB"
    if auth_mode == "connection_string":
        if not has_value(AZURE_STORAGE_CONNECTION_STRING):
            return (
                f"{AZURE_STORAGE_CONNECTION_STRING} environment variable must be set when {prefix} and "
                f"{AZURE_STORAGE_AUTH_MODE} is connection_string"
            )
    elif auth_mode in ("workload_identity", "default"):
        if not has_value(AZURE_STORAGE_ACCOUNT_URL):
            return (
                f"{AZURE_STORAGE_ACCOUNT_URL} environment variable must be set when {prefix} and "
                f"{AZURE_STORAGE_AUTH_MODE} is {auth_mode}"
            )
    elif not has_value(AZURE_STORAGE_CONNECTION_STRING) and not has_value(AZURE_STORAGE_ACCOUNT_URL):
        return (
            f"either {AZURE_STORAGE_CONNECTION_STRING} or {AZURE_STORAGE_ACCOUNT_URL} "
            f"environment variable must be set when {prefix}"
        )
    return None


def history_server_error(spec: RayClusterSpec, gates: FeatureGates) -> str | None:
    options = spec.history_server_options
    if options is None:
        return None
    if not gates.ray_cluster_history_server:
        return "RayClusterHistoryServer feature gate is not enabled"
    if options.collector_options is None:
        return "historyServerOptions.collectorOptions must be set"
    error = collector_options_error(options.collector_options)
    if error:
        return error
    tail = (
        f"must not define a container with name '{COLLECTOR_CONTAINER_NAME}' "
        "when history server collector options are enabled"
    )
    if any(c.name == COLLECTOR_CONTAINER_NAME for c in spec.head_group_spec.template.spec.containers):
        return f"head pod template {tail}"
    for group in spec.worker_group_specs:
        if any(c.name == COLLECTOR_CONTAINER_NAME for c in group.template.spec.containers):
            return f"worker group {group.group_name} pod template {tail}"
    return None


# ---- network policy -------------------------------------------------------------------------------


def _rules_against_mode(
    where: str, ingress: list[Any], egress: list[Any], mode: NetworkPolicyMode
) -> str | None:
    if mode == NetworkPolicyMode.DENY_ALL_EGRESS and ingress:
        return f"{where}.ingressRules cannot be set when mode is {go_quote(mode)} (ingress is not restricted)"
    if mode == NetworkPolicyMode.DENY_ALL_INGRESS and egress:
        return f"{where}.egressRules cannot be set when mode is {go_quote(mode)} (egress is not restricted)"
    return None


def network_policy_error(spec: RayClusterSpec, gates: FeatureGates) -> str | None:
    policy = spec.network_policy
    if policy is None:
        return None
    if not gates.ray_cluster_network_policy:
        return "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled"
    mode = policy.mode
    for where, rules in (("networkPolicy.head", policy.head), ("networkPolicy.worker", policy.worker)):
        if rules is not None:
            error = _rules_against_mode(where, rules.ingress_rules, rules.egress_rules, mode)
            if error:
                return error
    group_names: set[str] = set()
    for group in spec.worker_group_specs:
        errors = dns1123_label_errors(group.group_name)
        if errors:
            return (
                f"worker group name {go_quote(group.group_name)} must be a valid DNS1123 label "
                f"when networkPolicy is enabled (it is embedded in the NetworkPolicy name): {go_list(errors)}"
            )
        group_names.add(group.group_name)
    for entry in policy.worker_groups:
        where = f"networkPolicy.workerGroups[{go_quote(entry.group_name)}]"
        error = _rules_against_mode(where, entry.ingress_rules, entry.egress_rules, mode)
        if error:
            return error
        if entry.group_name not in group_names:
            return f"{where} does not match any group name in workerGroupSpecs"
    return None


# ---- mTLS -----------------------------------------------------------------------------------------

_TLS_MANAGED = "- the operator manages TLS configuration automatically"


def _tls_mount_error(mounts: list[dict[str, Any]], location: str) -> str | None:
    for mount in mounts:
        if mount.get("name") == RAY_TLS_VOLUME_NAME:
            name = go_quote(RAY_TLS_VOLUME_NAME)
            return f"cannot use volume mount named {name} in {location} when tlsOptions is set {_TLS_MANAGED}"
        if mount.get("mountPath") == RAY_TLS_CERT_MOUNT_PATH:
            path = go_quote(RAY_TLS_CERT_MOUNT_PATH)
            return (
                f"cannot use volume mount at path {path} in {location} when tlsOptions is set {_TLS_MANAGED}"
            )
    return None


def _tls_container_error(container: Container, env_location: str, mount_location: str) -> str | None:
    names = set(env_names(container.env))
    for env_name in TLS_ENV_VARS:
        if env_name in names:
            return (
                f"cannot set {env_name} environment variable in {env_location} "
                f"when tlsOptions is set {_TLS_MANAGED}"
            )
    return _tls_mount_error(extra_list(container, "volumeMounts"), mount_location)


def tls_options_error(spec: RayClusterSpec, gates: FeatureGates) -> str | None:
    if spec.tls_options is None:
        return None
    if not gates.ray_cluster_mtls:
        return "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"
    if spec.tls_options.enabled is not True:
        return None
    head_containers = spec.head_group_spec.template.spec.containers
    if head_containers:
        error = _tls_container_error(head_containers[0], "head Pod", "head Pod")
        if error:
            return error
    for group in spec.worker_group_specs:
        if group.template.spec.containers:
            location = f"worker group {go_quote(group.group_name)}"
            error = _tls_container_error(group.template.spec.containers[0], location, location)
            if error:
                return error
    autoscaler = spec.autoscaler_options
    if autoscaler is not None:
        names = set(env_names(autoscaler.env))
        for env_name in TLS_ENV_VARS:
            if env_name in names:
                return (
                    f"cannot set {env_name} environment variable in autoscalerOptions.env "
                    "when tlsOptions is set - the operator manages TLS configuration "
                    "for the autoscaler automatically"
                )
        return _tls_mount_error(autoscaler.volume_mounts, "autoscalerOptions.volumeMounts")
    return None
