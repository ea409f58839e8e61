"""Reading manifests: text formats, header checks, namespace default and one clear error message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from models import (
    ManifestError,
    RayJob,
    RayService,
    dump_manifest,
    load_manifest_text,
    parse_manifest,
    parse_raycluster,
    parse_rayjob,
    parse_rayservice,
)
from tests.models.kuberay_documents import DELETE, HEAD_ONLY_CLUSTER_SPEC, patched

RAYJOB: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "sample"},
    "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": HEAD_ONLY_CLUSTER_SPEC},
}
RAYSERVICE: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayService",
    "metadata": {"name": "svc", "namespace": "serving"},
    "spec": {"serveConfigV2": "applications: []\n", "rayClusterConfig": HEAD_ONLY_CLUSTER_SPEC},
}


def error_of(manifest: dict[str, Any]) -> str:
    with pytest.raises(ManifestError) as raised:
        parse_manifest(manifest)
    return str(raised.value)


def test_parse_manifest_dispatches_on_kind() -> None:
    assert isinstance(parse_manifest(RAYJOB), RayJob)
    assert isinstance(parse_manifest(RAYSERVICE), RayService)


def test_namespace_defaults_to_default_without_appearing_in_dump() -> None:
    job = parse_rayjob(RAYJOB)
    assert job.metadata.namespace == "default"
    assert dump_manifest(job) == RAYJOB
    assert parse_rayservice(RAYSERVICE).metadata.namespace == "serving"


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (
            patched(RAYJOB, {"apiVersion": "ray.io/v2"}),
            'unsupported apiVersion "ray.io/v2": expected "ray.io/v1"',
        ),
        (patched(RAYJOB, {"apiVersion": DELETE}), 'missing apiVersion: expected "ray.io/v1"'),
        (
            patched(RAYJOB, {"kind": "RayCluster"}),
            'unsupported kind "RayCluster": expected RayJob or RayService',
        ),
        (patched(RAYJOB, {"kind": DELETE}), "missing kind: expected RayJob or RayService"),
        (patched(RAYJOB, {"metadata": {}}), "metadata.name: Field required"),
        (
            patched(RAYJOB, {"metadata": {"generateName": "sample-"}}),
            "metadata.name: Field required (metadata.generateName is resolved by `raypilot apply`; "
            "a workflow started directly needs metadata.name)",
        ),
    ],
)
def test_header_errors(manifest: dict[str, Any], message: str) -> None:
    assert error_of(manifest) == message


def test_specific_parser_rejects_the_other_kind() -> None:
    with pytest.raises(ManifestError, match='unsupported kind "RayService": expected RayJob'):
        parse_rayjob(RAYSERVICE)
    with pytest.raises(ManifestError, match='unsupported kind "RayJob": expected RayService'):
        parse_rayservice(RAYJOB)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("spec.rayClusterSpec.foo", 1, 'unknown field "spec.rayClusterSpec.foo"'),
        ("spec.shutdownAfterJobFinish", True, 'unknown field "spec.shutdownAfterJobFinish"'),
        ("metadata.labelz", {}, 'unknown field "metadata.labelz"'),
        ("spec.backoffLimit", "three", "spec.backoffLimit: Input should be a valid integer"),
        ("spec.suspend", "maybe", "spec.suspend: Input should be a valid boolean"),
        (
            "spec.submissionMode",
            "PodMode",
            'spec.submissionMode: unsupported value "PodMode": expected one of K8sJobMode, HTTPMode, '
            "InteractiveMode, SidecarMode",
        ),
        (
            "spec.deletionStrategy",
            {"deletionRules": [{"policy": "DeleteSelf", "condition": {"jobDeploymentStatus": "Complete"}}]},
            "spec.deletionStrategy.deletionRules[0].condition.jobDeploymentStatus: "
            'unsupported value "Complete": expected one of Failed',
        ),
        (
            "spec.deletionStrategy",
            {"deletionRules": [{"condition": {"jobStatus": "FAILED"}}]},
            "spec.deletionStrategy.deletionRules[0].policy: Field required",
        ),
    ],
)
def test_field_errors_name_the_kuberay_path(path: str, value: object, message: str) -> None:
    assert error_of(patched(RAYJOB, {path: value})).startswith(message)


def test_worker_group_errors_carry_list_indices() -> None:
    manifest = patched(
        RAYJOB, {"spec.rayClusterSpec": {**HEAD_ONLY_CLUSTER_SPEC, "workerGroupSpecs": [{"template": {}}]}}
    )
    assert error_of(manifest) == "spec.rayClusterSpec.workerGroupSpecs[0].groupName: Field required"


def test_several_errors_form_one_message() -> None:
    manifest = patched(RAYJOB, {"spec.backoffLimit": "x", "spec.extra": 1})
    message = error_of(manifest)
    assert 'unknown field "spec.extra"' in message
    assert "spec.backoffLimit: Input should be a valid integer" in message
    assert "\n" not in message


def test_missing_required_rayservice_cluster_config() -> None:
    manifest = patched(RAYSERVICE, {"spec": {"serveConfigV2": ""}})
    assert error_of(manifest) == "spec.rayClusterConfig: Field required"


def test_kubernetes_pod_fields_are_accepted_unchanged() -> None:
    template = {
        "metadata": {"labels": {"app": "ray"}, "annotations": {"note": "x"}},
        "spec": {
            "containers": [
                {
                    "name": "ray-head",
                    "image": "rayproject/ray:2.60.0",
                    "securityContext": {"runAsNonRoot": True},
                    "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
                    "volumeMounts": [{"name": "logs", "mountPath": "/var/log/ray"}],
                    "resources": {"limits": {"cpu": 1, "memory": "2Gi"}, "requests": {"cpu": "500m"}},
                    "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                }
            ],
            "volumes": [{"name": "logs", "emptyDir": {}}],
            "affinity": {"nodeAffinity": {}},
            "priorityClassName": "high",
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "schedulingGates": [{"name": "wait"}],
        },
    }
    manifest = patched(RAYJOB, {"spec.submitterPodTemplate": template})
    job = parse_rayjob(manifest)
    assert dump_manifest(job) == manifest
    assert job.spec.submitter_pod_template is not None
    pod = job.spec.submitter_pod_template.spec
    assert pod.tolerations[0].key == "gpu"
    assert pod.scheduling_gates[0].name == "wait"
    assert pod.containers[0].resources.requests == {"cpu": "500m"}


def test_null_means_absent_for_fields_that_cannot_be_null() -> None:
    manifest = patched(RAYJOB, {"spec.entrypoint": None})
    manifest["spec"]["rayClusterSpec"] = {**HEAD_ONLY_CLUSTER_SPEC, "workerGroupSpecs": None}
    job = parse_rayjob(manifest)
    assert job.spec.entrypoint == ""
    assert job.spec.ray_cluster_spec is not None
    assert job.spec.ray_cluster_spec.worker_group_specs == []
    assert "entrypoint" not in dump_manifest(job)["spec"]


def test_explicit_null_of_a_nullable_field_round_trips() -> None:
    manifest = patched(RAYJOB, {"spec.activeDeadlineSeconds": None})
    job = parse_rayjob(manifest)
    assert job.spec.active_deadline_seconds is None
    assert dump_manifest(job) == manifest


def test_parse_raycluster() -> None:
    cluster = parse_raycluster(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "shared"},
            "spec": HEAD_ONLY_CLUSTER_SPEC,
        }
    )
    assert cluster.spec.ray_version == "2.60.0"


def test_load_yaml_and_json_give_the_same_object() -> None:
    yaml_text = "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: sample\nspec: {}\n"
    assert load_manifest_text(yaml_text) == load_manifest_text(
        json.dumps({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "sample"}, "spec": {}})
    )


def test_yaml_timestamps_stay_strings() -> None:
    loaded = load_manifest_text("metadata:\n  labels:\n    day: 2024-01-01\n")
    assert loaded == {"metadata": {"labels": {"day": "2024-01-01"}}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("spec:\n  entrypoint: [unclosed\n", "invalid YAML at line 3, column 1"),
        ("spec:\n\tentrypoint: x\n", "invalid YAML at line 2"),
        ('{"apiVersion": "ray.io/v1",\n "kind": }', "invalid JSON at line 2, column 10"),
        ("- a\n- b\n", "a manifest must be a mapping (an object), got a list"),
        ("just text", "a manifest must be a mapping (an object), got a string"),
        ("", "the manifest is empty"),
        ("a: 1\n---\nb: 2\n", "invalid YAML"),
        ('{"spec": ' + "[" * 100_000 + "]" * 100_000 + "}", "the manifest is nested too deeply to read"),
        ("spec: " + "[" * 100_000 + "]" * 100_000 + "\n", "the manifest is nested too deeply to read"),
        (
            '{"kind": "RayJob", "blob": "' + "x" * (3 << 20) + '"}',
            f"the manifest is {(3 << 20) + 30} bytes: Request entity too large: limit is 3145728",
        ),
    ],
    ids=["yaml", "tab", "json", "list", "string", "empty", "two docs", "deep json", "deep yaml", "large"],
)
def test_malformed_text(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as raised:
        load_manifest_text(text)
    assert str(raised.value).startswith(message)


def test_non_mapping_object_is_rejected() -> None:
    with pytest.raises(ManifestError, match="got a list"):
        parse_manifest([])  # type: ignore[arg-type]


def test_manifest_error_is_a_value_error() -> None:
    assert issubclass(ManifestError, ValueError)
