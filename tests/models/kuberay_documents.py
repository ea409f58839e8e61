"""The documents the unit tests build their cases from: the RayClusterSpec of KubeRay's own tests, the
smallest valid one, the dotted-path patch a table case applies to a valid document, and those tables as
pytest parameters."""

from __future__ import annotations

import copy
from typing import Any

import pytest

DNS1035_LABEL_RULE = (
    "[a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]"
)
"""How KubeRay (from Kubernetes' apimachinery) says what a DNS-1035 label is, in its name errors."""

HEAD_ONLY_CLUSTER_SPEC: dict[str, Any] = {
    "rayVersion": "2.60.0",
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}},
    },
}
"""The smallest valid RayClusterSpec: a Ray 2.60 head and no worker group."""

DELETE = object()
"""A `patched` value that removes the field instead of setting it."""


def sample(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A ray.io/v1 object of `kind` in the default namespace, like KubeRay's config/samples."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def kuberay_test_cluster(
    ray_version: str,
    image: str,
    *,
    min_replicas: int = 0,
    max_replicas: int = 5,
    head_start_params: dict[str, str] | None = None,
) -> dict[str, Any]:
    """KubeRay's test RayClusterSpec: a head and one worker group, small-group, of one replica."""

    def pod(container: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": container, "image": image}]}}

    return {
        "rayVersion": ray_version,
        "headGroupSpec": {"rayStartParams": head_start_params or {}, "template": pod("ray-head")},
        "workerGroupSpecs": [
            {
                "groupName": "small-group",
                "replicas": 1,
                "minReplicas": min_replicas,
                "maxReplicas": max_replicas,
                "template": pod("ray-worker"),
            }
        ],
    }


def deletion_rule(
    policy: str, ttl: int = 0, job_status: str | None = None, deployment: str | None = None
) -> dict[str, Any]:
    """A RayJob deletionRules entry: `policy` `ttl` seconds after the job ends with that job status and/or
    deployment status."""
    condition: dict[str, Any] = {"ttlSeconds": ttl}
    if job_status is not None:
        condition["jobStatus"] = job_status
    if deployment is not None:
        condition["jobDeploymentStatus"] = deployment
    return {"policy": policy, "condition": condition}


def patched(document: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of `document` with each dotted path ("a.0.b") set to its value (DELETE removes it)."""
    result = copy.deepcopy(document)
    for path, value in changes.items():
        *parents, last = path.split(".")
        node: Any = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return result


def named_cases(cases: list[tuple[str, dict[str, Any], str | None]]) -> list[Any]:
    """(name, changes, expected message) rows as pytest parameters (changes, expected) with the name as id."""
    return [pytest.param(changes, expected, id=name) for name, changes, expected in cases]
