"""KubeRay's ValidateRayClusterSpec: a failing and a passing case per rule (as in validation_test.go)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from models.features import FeatureGates
from models.raycluster import RayClusterSpec
from models.validation import validate_created_cluster, validate_raycluster_spec
from tests.models.kuberay_documents import kuberay_test_cluster, named_cases, patched

V2 = "RAY_enable_autoscaler_v2"
ALL_GATES = FeatureGates(
    gcs_fault_tolerance_embedded_storage=True,
    ray_cluster_history_server=True,
    ray_cluster_network_policy=True,
    ray_cluster_mtls=True,
)


def base() -> dict[str, Any]:
    return kuberay_test_cluster("2.60.0", "rayproject/ray:2.60.0")


HEAD = "headGroupSpec"
HEAD_POD = "headGroupSpec.template.spec"
HEAD_CONTAINER = "headGroupSpec.template.spec.containers.0"
WORKER = "workerGroupSpecs.0"
WORKER_POD = "workerGroupSpecs.0.template.spec"
WORKER_CONTAINER = "workerGroupSpecs.0.template.spec.containers.0"
AUTOSCALING = {"enableInTreeAutoscaling": True}
AUTOSCALING_V2 = {"enableInTreeAutoscaling": True, "autoscalerOptions": {"version": "v2"}}


def env(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in pairs]


def collector(*pairs: tuple[str, str], image: str = "collector:1") -> dict[str, Any]:
    return {"historyServerOptions": {"collectorOptions": {"image": image, "env": env(*pairs)}}}


CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("valid base", {}, None),
    # containers
    (
        "head without containers",
        {f"{HEAD_POD}.containers": []},
        "headGroupSpec should have at least one container",
    ),
    (
        "worker without containers",
        {f"{WORKER_POD}.containers": []},
        "workerGroupSpec should have at least one container",
    ),
    # replicas
    (
        "negative minReplicas",
        {f"{WORKER}.minReplicas": -1},
        "worker group small-group has negative minReplicas -1",
    ),
    (
        "negative maxReplicas",
        {f"{WORKER}.maxReplicas": -1},
        "worker group small-group has negative maxReplicas -1",
    ),
    (
        "minReplicas above maxReplicas",
        {f"{WORKER}.minReplicas": 5, f"{WORKER}.maxReplicas": 3},
        "worker group small-group has minReplicas 5 greater than maxReplicas 3",
    ),
    ("replicas outside the bounds are clamped, not rejected", {f"{WORKER}.replicas": 100}, None),
    # resources and labels
    (
        "head resources in both places",
        {f"{HEAD}.rayStartParams": {"num-cpus": "1"}, f"{HEAD}.resources": {"CPU": "1"}},
        "resource fields should not be set in both rayStartParams and Resources for Head group; please use "
        "only one",
    ),
    (
        "worker resources in both places",
        {f"{WORKER}.rayStartParams": {"memory": "1000"}, f"{WORKER}.resources": {"CPU": "1"}},
        "resource fields should not be set in both rayStartParams and Resources for small-group group; "
        "please use only one",
    ),
    ("resources only in the Resources field", {f"{HEAD}.resources": {"CPU": "1"}}, None),
    (
        "labels in head rayStartParams",
        {f"{HEAD}.rayStartParams": {"labels": "a=b"}},
        "rayStartParams['labels'] is not supported for Head group; please use the top-level Labels field "
        "instead",
    ),
    (
        "labels in worker rayStartParams",
        {f"{WORKER}.rayStartParams": {"labels": "a=b"}},
        "rayStartParams['labels'] is not supported for small-group group; "
        "please use the top-level Labels field instead",
    ),
    (
        "invalid label key",
        {f"{WORKER}.labels": {"invalid_key!": "v"}},
        "invalid label key for small-group group: 'invalid_key!', error: name part must consist of "
        "alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', "
        " or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ),
    (
        "invalid label value",
        {f"{HEAD}.labels": {"valid-key": "invalid/value"}},
        "invalid label value for key 'valid-key' in Head group: 'invalid/value', error: a valid label must "
        "be an "
        "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
    ("valid labels", {f"{HEAD}.labels": {"example.com/zone": "us-east-1", "tier": ""}}, None),
    # idle timeout
    (
        "negative idle timeout",
        {f"{WORKER}.idleTimeoutSeconds": -10},
        "worker group small-group: idleTimeoutSeconds must be non-negative, got -10",
    ),
    (
        "idle timeout without autoscaler v2",
        {f"{WORKER}.idleTimeoutSeconds": 10},
        "worker group small-group: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set "
        ".spec.autoscalerOptions.version to 'v2' (or set RAY_enable_autoscaler_v2 environment variable to "
        "'true' "
        "in the head pod if using KubeRay < 1.4.0)",
    ),
    ("idle timeout with autoscaler v2", {f"{WORKER}.idleTimeoutSeconds": 10, **AUTOSCALING_V2}, None),
    (
        "idle timeout with the v2 env var",
        {f"{WORKER}.idleTimeoutSeconds": 10, **AUTOSCALING, f"{HEAD_CONTAINER}.env": env((V2, "true"))},
        None,
    ),
    # priority
    (
        "priority without a Ray version",
        {f"{WORKER}.priority": 1, "rayVersion": ""},
        "worker group small-group: priority is set, but RayVersion was not specified. "
        "Ray version 2.56.0 or later is required",
    ),
    (
        "priority with an unparsable Ray version",
        {f"{WORKER}.priority": 1, "rayVersion": "invalid"},
        "worker group small-group: priority is set, but RayVersion format is invalid: invalid, could not "
        "parse "
        '"invalid" as version',
    ),
    (
        "priority with an old Ray version",
        {f"{WORKER}.priority": 1, "rayVersion": "2.55.0"},
        "worker group small-group: priority is set, but minimum Ray version is 2.56.0, got 2.55.0",
    ),
    (
        "priority without autoscaler v2",
        {f"{WORKER}.priority": 2},
        "worker group small-group: priority is set to 2, but autoscaler v2 is not enabled. "
        "Priority is only supported with autoscaler v2 enabled",
    ),
    ("priority with autoscaler v2", {f"{WORKER}.priority": 2, **AUTOSCALING_V2}, None),
    ("priority zero is no priority", {f"{WORKER}.priority": 0, "rayVersion": ""}, None),
    # GCS fault tolerance
    (
        "ft annotation and options together",
        {
            "gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
            "__annotations__": {"ray.io/ft-enabled": "false"},
        },
        "ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. "
        "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance",
    ),
    (
        "redis address env without fault tolerance",
        {f"{HEAD_CONTAINER}.env": env(("RAY_REDIS_ADDRESS", "redis:6379"))},
        "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but "
        "GcsFaultToleranceOptions is "
        "not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance",
    ),
    (
        "redis address env with the ft annotation",
        {
            f"{HEAD_CONTAINER}.env": env(("RAY_REDIS_ADDRESS", "redis:6379")),
            "__annotations__": {"ray.io/ft-enabled": "true"},
        },
        None,
    ),
    (
        "redis-password in rayStartParams with ft options",
        {
            "gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
            f"{HEAD}.rayStartParams": {"redis-password": "x"},
        },
        "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - "
        "use GcsFaultToleranceOptions.RedisPassword instead",
    ),
    (
        "REDIS_PASSWORD env with ft options",
        {
            "gcsFaultToleranceOptions": {"redisAddress": "r:1"},
            f"{HEAD_CONTAINER}.env": env(("REDIS_PASSWORD", "x")),
        },
        "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - "
        "use GcsFaultToleranceOptions.RedisPassword instead",
    ),
    (
        "RAY_REDIS_ADDRESS env with ft options",
        {
            "gcsFaultToleranceOptions": {"redisAddress": "r:1"},
            f"{HEAD_CONTAINER}.env": env(("RAY_REDIS_ADDRESS", "r:1")),
        },
        "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - "
        "use GcsFaultToleranceOptions.RedisAddress instead",
    ),
    (
        "external storage namespace annotation with ft options",
        {
            "gcsFaultToleranceOptions": {"redisAddress": "r:1"},
            "__annotations__": {"ray.io/external-storage-namespace": "ns"},
        },
        "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled "
        "- "
        "use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
    ),
    ("valid redis fault tolerance", {"gcsFaultToleranceOptions": {"redisAddress": "redis:6379"}}, None),
    (
        "storage with the redis backend",
        {"gcsFaultToleranceOptions": {"redisAddress": "r:1", "storage": {"size": "1Gi"}}},
        "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the "
        "'rocksdb' backend",
    ),
    (
        "rocksdb without its gate",
        {"gcsFaultToleranceOptions": {"backend": "rocksdb"}, "__gates__": FeatureGates()},
        "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "
        "requires "
        "the GCSFaultToleranceEmbeddedStorage feature gate to be enabled",
    ),
    ("valid rocksdb", {"gcsFaultToleranceOptions": {"backend": "rocksdb", "storage": {"size": "1Gi"}}}, None),
    (
        "rocksdb with a redis address",
        {"gcsFaultToleranceOptions": {"backend": "rocksdb", "redisAddress": "r:1"}},
        "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'",
    ),
    (
        "rocksdb with an external storage namespace",
        {"gcsFaultToleranceOptions": {"backend": "rocksdb", "externalStorageNamespace": "x"}},
        "cannot set GcsFaultToleranceOptions.ExternalStorageNamespace when backend is 'rocksdb'",
    ),
    (
        "rocksdb claim with a size",
        {"gcsFaultToleranceOptions": {"backend": "rocksdb", "storage": {"claimName": "pvc", "size": "1Gi"}}},
        "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and "
        "accessModes",
    ),
    (
        "rocksdb with a managed env var",
        {
            "gcsFaultToleranceOptions": {"backend": "rocksdb"},
            f"{HEAD_CONTAINER}.env": env(("RAY_gcs_storage", "x")),
        },
        "cannot set `RAY_gcs_storage` or `RAY_gcs_storage_path` env var in head Pod when the embedded GCS FT "
        "backend is used - these are managed by KubeRay",
    ),
    (
        "rocksdb with a managed volume mount",
        {
            "gcsFaultToleranceOptions": {"backend": "rocksdb"},
            f"{HEAD_CONTAINER}.volumeMounts": [{"name": "data", "mountPath": "/data/gcs"}],
        },
        'cannot set a volume mount named "gcs-storage" or mounted at /data/gcs in the head container when '
        "the "
        "embedded GCS FT backend is used - it is managed by KubeRay",
    ),
    (
        "rocksdb with a managed volume",
        {
            "gcsFaultToleranceOptions": {"backend": "rocksdb"},
            f"{HEAD_POD}.volumes": [{"name": "gcs-storage"}],
        },
        'cannot set a volume named "gcs-storage" in the head Pod when the embedded GCS FT backend is used - '
        "it is managed by KubeRay",
    ),
    (
        "redis username in rayStartParams",
        {f"{HEAD}.rayStartParams": {"redis-username": "u"}},
        "cannot set redis username in rayStartParams or environment variables - "
        "use GcsFaultToleranceOptions.RedisUsername instead",
    ),
    (
        "REDIS_USERNAME env",
        {f"{HEAD_CONTAINER}.env": env(("REDIS_USERNAME", "u"))},
        "cannot set redis username in rayStartParams or environment variables - "
        "use GcsFaultToleranceOptions.RedisUsername instead",
    ),
    # suspended worker groups and the autoscaler
    (
        "suspended group without the deletion policy gate",
        {f"{WORKER}.suspend": True, "__gates__": FeatureGates(ray_job_deletion_policy=False)},
        "worker group small-group can be suspended only when the RayJobDeletionPolicy feature gate is "
        "enabled",
    ),
    ("suspended group with the gate", {f"{WORKER}.suspend": True}, None),
    (
        "suspended group with the autoscaler",
        {f"{WORKER}.suspend": True, **AUTOSCALING},
        "worker group small-group cannot be suspended with Autoscaler enabled",
    ),
    (
        "v2 env var '1' without the autoscaler",
        {f"{HEAD_CONTAINER}.env": env((V2, "1"))},
        "environment variable RAY_enable_autoscaler_v2 cannot be set to '1' when enableInTreeAutoscaling is "
        "false. Please set enableInTreeAutoscaling: true to use autoscaler v2",
    ),
    (
        "v2 env var 'true' without the autoscaler",
        {f"{HEAD_CONTAINER}.env": env((V2, "true"))},
        "environment variable RAY_enable_autoscaler_v2 cannot be set to 'true' when enableInTreeAutoscaling "
        "is "
        "false. Please set enableInTreeAutoscaling: true to use autoscaler v2",
    ),
    ("v2 env var 'false' without the autoscaler", {f"{HEAD_CONTAINER}.env": env((V2, "false"))}, None),
    (
        "autoscaler version and v2 env var",
        {**AUTOSCALING_V2, f"{HEAD_CONTAINER}.env": env((V2, "true"))},
        "both .spec.autoscalerOptions.version and head Pod env var RAY_enable_autoscaler_v2 are set, "
        "please only use the former",
    ),
    (
        "autoscaler v2 with head restartPolicy Always",
        {**AUTOSCALING_V2, f"{HEAD_POD}.restartPolicy": "Always"},
        "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
    ),
    (
        "autoscaler v2 with worker restartPolicy OnFailure",
        {**AUTOSCALING_V2, f"{WORKER_POD}.restartPolicy": "OnFailure"},
        "restartPolicy for worker group small-group should be Never or unset when using autoscaler V2",
    ),
    (
        "autoscaler v2 with restartPolicy Never",
        {**AUTOSCALING_V2, f"{HEAD_POD}.restartPolicy": "Never"},
        None,
    ),
    (
        "negative autoscaler idle timeout",
        {"autoscalerOptions": {"idleTimeoutSeconds": -10}},
        "autoscalerOptions.idleTimeoutSeconds must be non-negative, got -10",
    ),
    (
        "autoscaler env shadows the generated start command",
        {"autoscalerOptions": {"env": env(("KUBERAY_GEN_AUTOSCALER_START_CMD", "x"))}},
        "autoscalerOptions.env must not contain KUBERAY_GEN_AUTOSCALER_START_CMD: it is managed by KubeRay "
        "and "
        "injected automatically into the autoscaler container",
    ),
    # history server
    (
        "history server without its gate",
        {**collector(("STORAGE_BACKEND", "S3"), ("S3_REGION", "x")), "__gates__": FeatureGates()},
        "RayClusterHistoryServer feature gate is not enabled",
    ),
    (
        "history server without collector options",
        {"historyServerOptions": {}},
        "historyServerOptions.collectorOptions must be set",
    ),
    (
        "collector without image",
        collector(("STORAGE_BACKEND", "S3"), image=""),
        "historyServerOptions.collectorOptions.image must be set",
    ),
    (
        "collector with a managed env var",
        collector(("POD_IP", "1.2.3.4")),
        "historyServerOptions.collectorOptions.env must not contain POD_IP: it is managed by KubeRay and "
        "injected automatically into the collector container",
    ),
    (
        "collector without a storage backend",
        collector(),
        "STORAGE_BACKEND environment variable must be set with a literal string value in "
        "historyServerOptions.collectorOptions.env",
    ),
    (
        "GCS backend without bucket",
        collector(("STORAGE_BACKEND", "gcs")),
        "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS",
    ),
    ("valid S3 collector", collector(("STORAGE_BACKEND", "S3"), ("S3_REGION", "us-east-1")), None),
    (
        "Azure connection string mode without the string",
        collector(("STORAGE_BACKEND", "AZUREBLOB"), ("AZURE_STORAGE_AUTH_MODE", "connection_string")),
        "AZURE_STORAGE_CONNECTION_STRING environment variable must be set when STORAGE_BACKEND is AZUREBLOB "
        "and "
        "AZURE_STORAGE_AUTH_MODE is connection_string",
    ),
    (
        "Azure without credentials",
        collector(("STORAGE_BACKEND", "AZUREBLOB")),
        "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL environment variable must be "
        "set "
        "when STORAGE_BACKEND is AZUREBLOB",
    ),
    (
        "Aliyun without region",
        collector(("STORAGE_BACKEND", "ALIYUNOSS"), ("OSS_BUCKET", "b"), ("OSS_ENDPOINT", "e")),
        "OSS_REGION environment variable must be set when STORAGE_BACKEND is ALIYUNOSS",
    ),
    (
        "head container named like the collector",
        {
            **collector(("STORAGE_BACKEND", "S3"), ("S3_REGION", "x")),
            f"{HEAD_POD}.containers": [{"name": "ray-head"}, {"name": "ray-history-collector"}],
        },
        "head pod template must not define a container with name 'ray-history-collector' when history server "
        "collector options are enabled",
    ),
    # authentication
    (
        "token auth without a Ray version",
        {"authOptions": {"mode": "token"}, "rayVersion": ""},
        "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is "
        "required",
    ),
    (
        "token auth with an unparsable Ray version",
        {"authOptions": {"mode": "token"}, "rayVersion": "invalid-version"},
        "authOptions.mode is 'token' but RayVersion format is invalid: invalid-version, could not parse "
        '"invalid-version" as version',
    ),
    (
        "token auth with an old Ray version",
        {"authOptions": {"mode": "token"}, "rayVersion": "2.50.0"},
        "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.50.0",
    ),
    ("token auth with Ray 2.52", {"authOptions": {"mode": "token"}, "rayVersion": "2.52.0"}, None),
    (
        "k8s token auth with an old Ray version",
        {"authOptions": {"mode": "token", "enableK8sTokenAuth": True}, "rayVersion": "2.54.0"},
        "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got 2.54.0",
    ),
    (
        "k8s token auth with a secret name",
        {"authOptions": {"mode": "token", "enableK8sTokenAuth": True, "secretName": "s"}},
        "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
    ),
    (
        "k8s token auth without token mode",
        {"authOptions": {"enableK8sTokenAuth": True}},
        "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'",
    ),
    # network policy
    (
        "network policy without its gate",
        {"networkPolicy": {}, "__gates__": FeatureGates()},
        "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
    ),
    ("default network policy", {"networkPolicy": {}}, None),
    (
        "head ingress rules when only egress is denied",
        {"networkPolicy": {"mode": "DenyAllEgress", "head": {"ingressRules": [{}]}}},
        'networkPolicy.head.ingressRules cannot be set when mode is "DenyAllEgress" (ingress is not '
        "restricted)",
    ),
    (
        "worker egress rules when only ingress is denied",
        {"networkPolicy": {"mode": "DenyAllIngress", "worker": {"egressRules": [{}]}}},
        'networkPolicy.worker.egressRules cannot be set when mode is "DenyAllIngress" (egress is not '
        "restricted)",
    ),
    (
        "group name that is no DNS-1123 label",
        {"networkPolicy": {}, f"{WORKER}.groupName": "GPU-Group"},
        'worker group name "GPU-Group" must be a valid DNS1123 label when networkPolicy is enabled (it is '
        "embedded in the NetworkPolicy name): [a lowercase RFC 1123 label must consist of lower case "
        "alphanumeric "
        "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]",
    ),
    (
        "network policy for an unknown group",
        {"networkPolicy": {"workerGroups": [{"groupName": "samll-group"}]}},
        'networkPolicy.workerGroups["samll-group"] does not match any group name in workerGroupSpecs',
    ),
    # mTLS
    (
        "tls options without their gate",
        {"tlsOptions": {"enabled": True}, "__gates__": FeatureGates()},
        "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled",
    ),
    (
        "tls with a managed env var on the head",
        {"tlsOptions": {"enabled": True}, f"{HEAD_CONTAINER}.env": env(("RAY_USE_TLS", "1"))},
        "cannot set RAY_USE_TLS environment variable in head Pod when tlsOptions is set - the operator "
        "manages "
        "TLS configuration automatically",
    ),
    (
        "tls disabled ignores env vars",
        {"tlsOptions": {"enabled": False}, f"{HEAD_CONTAINER}.env": env(("RAY_USE_TLS", "1"))},
        None,
    ),
    (
        "tls with the managed volume mount on a worker",
        {
            "tlsOptions": {"enabled": True},
            f"{WORKER_CONTAINER}.volumeMounts": [{"name": "ray-tls", "mountPath": "/x"}],
        },
        'cannot use volume mount named "ray-tls" in worker group "small-group" when tlsOptions is set - the '
        "operator manages TLS configuration automatically",
    ),
    (
        "tls with the managed mount path in the autoscaler",
        {
            "tlsOptions": {"enabled": True},
            "autoscalerOptions": {"volumeMounts": [{"name": "c", "mountPath": "/etc/ray/tls"}]},
        },
        'cannot use volume mount at path "/etc/ray/tls" in autoscalerOptions.volumeMounts when tlsOptions '
        "is set "
        "- the operator manages TLS configuration automatically",
    ),
    ("valid tls", {"tlsOptions": {"enabled": True}}, None),
]


@pytest.mark.parametrize(("changes", "expected"), named_cases(CASES))
def test_validate_raycluster_spec(changes: dict[str, Any], expected: str | None) -> None:
    changes = dict(changes)
    annotations = changes.pop("__annotations__", {})
    gates = changes.pop("__gates__", ALL_GATES)
    spec = RayClusterSpec.model_validate(patched(base(), changes))
    assert validate_raycluster_spec(spec, annotations, gates) == expected


def test_first_error_wins_in_kuberay_order() -> None:
    changes = {
        f"{WORKER}.minReplicas": -1,
        f"{HEAD}.rayStartParams": {"labels": "x"},
        "authOptions": {"mode": "token"},
    }
    spec = RayClusterSpec.model_validate(patched(base(), changes))
    assert validate_raycluster_spec(spec, {}, ALL_GATES) == (
        "rayStartParams['labels'] is not supported for Head group; please use the top-level Labels field "
        "instead"
    )


@pytest.mark.parametrize(
    ("changes", "creator", "expected"),
    [
        ({}, "RayJob", None),
        (
            {"upgradeStrategy": {"type": "Recreate"}},
            "RayJob",
            "upgradeStrategy cannot be set when RayCluster is created by RayJob",
        ),
        (
            {"upgradeStrategy": {"type": "None"}},
            "RayService",
            "upgradeStrategy cannot be set when RayCluster is created by RayService",
        ),
        ({"upgradeStrategy": {}}, "RayService", None),
    ],
)
def test_upgrade_strategy_is_for_standalone_clusters_only(
    changes: dict[str, Any], creator: str, expected: str | None
) -> None:
    spec = RayClusterSpec.model_validate(patched(base(), changes))
    assert validate_created_cluster(spec, creator) == expected


def test_worker_group_names_must_be_unique() -> None:
    document = base()
    document["workerGroupSpecs"].append(copy.deepcopy(document["workerGroupSpecs"][0]))
    error = validate_created_cluster(RayClusterSpec.model_validate(document), "RayService")
    assert error is not None
    assert error.startswith("spec.workerGroupSpecs[1]: worker group names must be unique")
    document["workerGroupSpecs"][1]["groupName"] = "other-group"
    assert validate_created_cluster(RayClusterSpec.model_validate(document), "RayService") is None
