"""The `apply` update rules: identity, immutable fields (CEL transition rules), then full validation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from models.features import FeatureGates
from models.rayjob import RayJob
from models.rayservice import RayService
from models.validation import (
    CEL_GCS_BACKEND_IMMUTABLE,
    CEL_MANAGED_BY_IMMUTABLE,
    validate,
    validate_managed_by_unchanged,
    validate_update,
)

CLUSTER: dict[str, Any] = {
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}},
    },
}


def job(name: str = "job", namespace: str = "default", **spec: Any) -> RayJob:
    document = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": copy.deepcopy(CLUSTER), **spec},
    }
    return RayJob.model_validate(document)


def service(name: str = "svc", **spec: Any) -> RayService:
    document = {"metadata": {"name": name}, "spec": {"rayClusterConfig": copy.deepcopy(CLUSTER), **spec}}
    return RayService.model_validate(document)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, None, None),
        ("ray.io/kuberay-operator", "ray.io/kuberay-operator", None),
        ("ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue", CEL_MANAGED_BY_IMMUTABLE),
        ("kueue.x-k8s.io/multikueue", "ray.io/kuberay-operator", CEL_MANAGED_BY_IMMUTABLE),
        # Kubernetes evaluates transition rules only when both values exist.
        (None, "kueue.x-k8s.io/multikueue", None),
        ("kueue.x-k8s.io/multikueue", None, None),
    ],
)
def test_validate_managed_by_unchanged(old: str | None, new: str | None, expected: str | None) -> None:
    assert validate_managed_by_unchanged(old, new) == expected


def test_same_object_with_a_new_spec_is_accepted() -> None:
    assert validate_update(job(), job(entrypoint="python y.py", backoffLimit=2)) is None
    assert validate_update(service(), service(serveConfigV2="applications: []")) is None


def test_kind_cannot_change() -> None:
    assert validate_update(job(name="x"), service(name="x")) == (
        "kind is immutable: the object is a RayJob, the manifest is a RayService"
    )


def test_name_and_namespace_cannot_change() -> None:
    assert validate_update(job(name="a"), job(name="b")) == (
        "metadata.name is immutable: the object is 'a', the manifest names 'b'"
    )
    assert validate_update(job(namespace="a"), job(namespace="b")) == (
        "metadata.namespace is immutable: the object is in 'a', the manifest names 'b'"
    )


def test_managed_by_cannot_change() -> None:
    old = service(managedBy="ray.io/kuberay-operator")
    assert validate_update(old, service(managedBy="kueue.x-k8s.io/multikueue")) == CEL_MANAGED_BY_IMMUTABLE
    cluster_managed = {**CLUSTER, "managedBy": "ray.io/kuberay-operator"}
    other_manager = {**CLUSTER, "managedBy": "kueue.x-k8s.io/multikueue"}
    assert validate_update(job(rayClusterSpec=cluster_managed), job(rayClusterSpec=other_manager)) == (
        CEL_MANAGED_BY_IMMUTABLE
    )


def test_gcs_backend_cannot_change() -> None:
    def with_backend(backend: str) -> RayService:
        return service(rayClusterConfig={**CLUSTER, "gcsFaultToleranceOptions": {"backend": backend}})

    assert validate_update(with_backend("redis"), with_backend("rocksdb")) == CEL_GCS_BACKEND_IMMUTABLE
    assert validate_update(with_backend("redis"), with_backend("redis")) is None


def test_the_new_object_is_fully_validated() -> None:
    assert validate_update(job(), job(activeDeadlineSeconds=0)) == (
        "The RayJob spec is invalid: activeDeadlineSeconds must be a positive integer"
    )
    deletion_rules = {"deletionRules": [{"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}}]}
    gated_off = FeatureGates(ray_job_deletion_policy=False)
    assert validate_update(job(), job(deletionStrategy=deletion_rules), gated_off) == (
        "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
    )


def test_validate_dispatches_by_kind() -> None:
    assert validate(job(name="Bad")) is not None
    assert validate(service(name="Bad")) is not None
    assert validate(job()) is None
    assert validate(service()) is None
