"""RayService validation: CEL rules, KubeRay's metadata, spec and ClusterUpgradeOptions tables."""

from __future__ import annotations

from typing import Any

import pytest

from models.features import FeatureGates
from models.rayservice import RayService
from models.validation import CEL_MANAGED_BY_VALUE, initializing_timeout_seconds, validate_rayservice
from tests.models.kuberay_documents import (
    DNS1035_LABEL_RULE,
    kuberay_test_cluster,
    named_cases,
    patched,
    sample,
)

S = "The RayService spec is invalid: "
M = "The RayService metadata is invalid: "
TIMEOUT = "ray.io/initializing-timeout"


def base() -> dict[str, Any]:
    cluster = kuberay_test_cluster("2.60.0", "rayproject/ray", min_replicas=1, max_replicas=3)
    return sample(
        "RayService", "sample-service", {"serveConfigV2": "applications: []\n", "rayClusterConfig": cluster}
    )


def rayservice(changes: dict[str, Any]) -> RayService:
    return RayService.model_validate(patched(base(), changes))


def incremental(
    surge: int = 50,
    step: int | None = 50,
    interval: int | None = 10,
    gateway_class: str = "istio",
    autoscale: bool = True,
) -> dict[str, Any]:
    """KubeRay's TestValidateClusterUpgradeOptions parameters (surge, step, interval, class, autoscale)."""
    return {
        "spec.rayClusterConfig.enableInTreeAutoscaling": autoscale,
        "spec.upgradeStrategy": {
            "type": "NewClusterWithIncrementalUpgrade",
            "clusterUpgradeOptions": {
                "maxSurgePercent": surge,
                "stepSizePercent": step,
                "intervalSeconds": interval,
                "gatewayClassName": gateway_class,
            },
        },
    }


ANNOTATION_ERROR = M + "RayService annotations is invalid: annotation ray.io/initializing-timeout "

CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("valid", {}, None),
    # CRD CEL rules
    ("managedBy not allowed", {"spec.managedBy": "controller.com/invalid"}, CEL_MANAGED_BY_VALUE),
    ("managedBy by Kueue", {"spec.managedBy": "kueue.x-k8s.io/multikueue"}, None),
    ("cluster managedBy not allowed", {"spec.rayClusterConfig.managedBy": ""}, CEL_MANAGED_BY_VALUE),
    # metadata
    (
        "name too long",
        {"metadata.name": "s" * 48},
        M + "RayService name should be no more than 47 characters",
    ),
    (
        "name not a DNS-1035 label",
        {"metadata.name": "my_service"},
        M + "RayService name should be a valid DNS1035 label: " + DNS1035_LABEL_RULE,
    ),
    ("timeout as a Go duration", {"metadata.annotations": {TIMEOUT: "5m"}}, None),
    ("timeout in seconds", {"metadata.annotations": {TIMEOUT: "300"}}, None),
    ("empty timeout is no timeout", {"metadata.annotations": {TIMEOUT: ""}}, None),
    (
        "zero timeout",
        {"metadata.annotations": {TIMEOUT: "0"}},
        ANNOTATION_ERROR + "must be a positive duration, got: 0",
    ),
    (
        "negative seconds",
        {"metadata.annotations": {TIMEOUT: "-100"}},
        ANNOTATION_ERROR + "must be a positive integer (seconds), got: -100",
    ),
    (
        "negative duration",
        {"metadata.annotations": {TIMEOUT: "-5m"}},
        ANNOTATION_ERROR + "must be a positive duration, got: -5m",
    ),
    (
        "unparsable timeout",
        {"metadata.annotations": {TIMEOUT: "invalid"}},
        ANNOTATION_ERROR
        + "has invalid format: invalid. Expected Go duration format (e.g., '5m', '1h') or positive "
        "integer seconds",
    ),
    # ValidateRayServiceSpec, in order
    (
        "k8s token auth",
        {"spec.rayClusterConfig.authOptions": {"mode": "token", "enableK8sTokenAuth": True}},
        S + "K8s token auth mode is currently not supported for RayService",
    ),
    (
        "head without containers",
        {"spec.rayClusterConfig.headGroupSpec.template.spec.containers": []},
        S + "headGroupSpec should have at least one container",
    ),
    (
        "head service name",
        {"spec.rayClusterConfig.headGroupSpec.headService": {"metadata": {"name": "my-head"}}},
        S + "spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set",
    ),
    (
        "head service without a name",
        {"spec.rayClusterConfig.headGroupSpec.headService": {"metadata": {"labels": {"a": "b"}}}},
        None,
    ),
    (
        "unknown upgrade type",
        {"spec.upgradeStrategy": {"type": "Recreate"}},
        S + "Spec.UpgradeStrategy.Type value Recreate is invalid, valid options are "
        "NewClusterWithIncrementalUpgrade, NewCluster, or None",
    ),
    ("upgrade type None", {"spec.upgradeStrategy": {"type": "None"}}, None),
    ("upgrade type NewCluster", {"spec.upgradeStrategy": {"type": "NewCluster"}}, None),
    (
        "negative deletion delay",
        {"spec.rayClusterDeletionDelaySeconds": -1},
        S + "Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got -1",
    ),
    ("deletion delay 0", {"spec.rayClusterDeletionDelaySeconds": 0}, None),
    # ValidateClusterUpgradeOptions
    ("valid incremental upgrade", incremental(), None),
    (
        "incremental without autoscaler",
        incremental(autoscale=False),
        S + "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade",
    ),
    (
        "incremental without options",
        {
            "spec.rayClusterConfig.enableInTreeAutoscaling": True,
            "spec.upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade"},
        },
        S + "ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade",
    ),
    ("surge above 100", incremental(surge=200), S + "maxSurgePercent must be between 0 and 100"),
    ("step missing", incremental(step=None), S + "stepSizePercent must be between 0 and 100"),
    ("step negative", incremental(step=-1), S + "stepSizePercent must be between 0 and 100"),
    (
        "step above surge",
        incremental(surge=50, step=75),
        S + "stepSizePercent must be less than or equal to maxSurgePercent",
    ),
    ("interval 0", incremental(interval=0), S + "intervalSeconds must be greater than 0"),
    ("interval missing", incremental(interval=None), S + "intervalSeconds must be greater than 0"),
    (
        "no gateway class",
        incremental(gateway_class=""),
        S + "gatewayClassName is required for NewClusterWithIncrementalUpgrade",
    ),
    # the RayClusters this RayService creates
    (
        "upgradeStrategy on the cluster",
        {"spec.rayClusterConfig.upgradeStrategy": {"type": "Recreate"}},
        "upgradeStrategy cannot be set when RayCluster is created by RayService",
    ),
]


@pytest.mark.parametrize(("changes", "expected"), named_cases(CASES))
def test_validate_rayservice(changes: dict[str, Any], expected: str | None) -> None:
    assert validate_rayservice(rayservice(changes)) == expected


def test_upgrade_options_are_ignored_without_the_incremental_gate() -> None:
    service = rayservice(incremental(autoscale=False))
    gates = FeatureGates(ray_service_incremental_upgrade=False)
    assert validate_rayservice(service, gates) is None
    assert (
        validate_rayservice(service) == S + "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade"
    )


def test_cel_and_metadata_come_before_the_spec() -> None:
    bad_everything = {"metadata.name": "s" * 60, "spec.rayClusterDeletionDelaySeconds": -1}
    assert validate_rayservice(rayservice(bad_everything)) == (
        M + "RayService name should be no more than 47 characters"
    )
    assert validate_rayservice(rayservice({**bad_everything, "spec.managedBy": "x"})) == CEL_MANAGED_BY_VALUE


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("5m", 300.0),
        ("300", 300.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
        ("0", None),
        ("-1", None),
        ("bad", None),
    ],
)
def test_initializing_timeout_seconds(value: str, seconds: float | None) -> None:
    assert initializing_timeout_seconds({TIMEOUT: value}) == seconds


def test_no_initializing_timeout_annotation() -> None:
    assert initializing_timeout_seconds({}) is None
