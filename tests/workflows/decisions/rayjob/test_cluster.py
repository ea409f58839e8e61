"""The RayCluster a RayJob creates (constructRayClusterForRayJob), the dashboard URL (FetchHeadServiceURL)."""

from __future__ import annotations

from typing import Any

import pytest

from models.features import FeatureGates
from models.rayjob import RayJob
from tests.workflows.decisions.rayjob.rayjobs import rayjob
from workflows.decisions.rayjob.cluster import (
    DashboardPortNotFound,
    cluster_head_service_name,
    dashboard_url_from_head_service,
    rayjob_cluster_manifest,
)

HEAD_CONTAINER = {
    "name": "ray-head",
    "image": "rayproject/ray:2.60.0",
    "ports": [{"name": "dashboard", "containerPort": 8265}],
    "securityContext": {"runAsUser": 1000},  # a field raypilot does not model: must pass through
}


def make_job(mode: str, **spec: Any) -> RayJob:
    return RayJob.model_validate(
        {
            "metadata": {
                "name": "rj",
                "namespace": "team-a",
                "labels": {"team": "a", "ray.io/originated-from-crd": "spoofed"},
                "annotations": {"note": "x"},
            },
            "spec": {
                "submissionMode": mode,
                "entrypoint": "python main.py",
                "rayClusterSpec": {
                    "rayVersion": "2.60.0",
                    "headGroupSpec": {
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [HEAD_CONTAINER]}},
                    },
                    "workerGroupSpecs": [
                        {
                            "groupName": "small",
                            "replicas": 1,
                            "template": {"spec": {"containers": [HEAD_CONTAINER]}},
                        }
                    ],
                },
                **spec,
            },
            "status": {"jobId": "rj-xyz12"},
        }
    )


def manifest(job: RayJob, gates: FeatureGates | None = None) -> dict[str, Any]:
    gates = gates or FeatureGates()
    return rayjob_cluster_manifest(job, "rj-abcde", workflow_id="rayjob/team-a/rj", gates=gates)


def test_k8s_job_mode_cluster_is_the_spec_as_written_with_ownership() -> None:
    cluster = manifest(make_job("K8sJobMode"))
    assert cluster["apiVersion"] == "ray.io/v1"
    assert cluster["kind"] == "RayCluster"
    assert cluster["metadata"] == {
        "name": "rj-abcde",
        "namespace": "team-a",
        "labels": {
            "team": "a",
            "ray.io/originated-from-crd": "RayJob",
            "ray.io/originated-from-cr-name": "rj",
            "app.kubernetes.io/created-by": "raypilot",
            "ray.io/job-submission-mode": "K8sJobMode",
        },
        "annotations": {"note": "x", "raypilot.io/workflow-id": "rayjob/team-a/rj"},
    }
    assert "ownerReferences" not in cluster["metadata"]
    assert cluster["spec"] == {
        "rayVersion": "2.60.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [HEAD_CONTAINER]}}},
        "workerGroupSpecs": [
            {"groupName": "small", "replicas": 1, "template": {"spec": {"containers": [HEAD_CONTAINER]}}}
        ],
    }


def test_sidecar_mode_appends_the_submitter_and_never_restarts_the_head() -> None:
    job = make_job("SidecarMode")
    cluster = manifest(job)
    assert cluster["metadata"]["labels"]["ray.io/job-submission-mode"] == "SidecarMode"
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    head_pod = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert head_pod["restartPolicy"] == "Never"
    head, submitter = head_pod["containers"]
    assert head == HEAD_CONTAINER
    assert submitter["name"] == "ray-job-submitter"
    assert submitter["image"] == "rayproject/ray:2.60.0"
    assert (
        "ray job submit --address http://127.0.0.1:8265 --submission-id rj-xyz12 -- python main.py ;"
        in (submitter["args"][0])
    )
    assert {"name": "RAY_JOB_SUBMISSION_ID", "value": "rj-xyz12"} in submitter["env"]
    # The worker groups are untouched, and the RayJob's own spec is not modified.
    assert cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"] == [HEAD_CONTAINER]
    assert job.spec.ray_cluster_spec is not None
    assert len(job.spec.ray_cluster_spec.head_group_spec.template.spec.containers) == 1


def test_sidecar_submitter_restarts_with_the_gate() -> None:
    cluster = manifest(make_job("SidecarMode"), FeatureGates(sidecar_submitter_restart=True))
    submitter = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][1]
    assert submitter["restartPolicy"] == "OnFailure"


def test_cluster_selector_jobs_create_no_cluster() -> None:
    job = rayjob({"clusterSelector": {"ray.io/cluster": "c"}})
    with pytest.raises(ValueError, match="rayClusterSpec"):
        manifest(job)


def test_head_service_name() -> None:
    job = make_job("HTTPMode")
    assert job.spec.ray_cluster_spec is not None
    assert cluster_head_service_name("rj-abcde", job.spec.ray_cluster_spec) == "rj-abcde-head-svc"
    job.spec.ray_cluster_spec.head_group_spec.head_service = {"metadata": {"name": "custom-head"}}
    assert cluster_head_service_name("rj-abcde", job.spec.ray_cluster_spec) == "custom-head"


def test_dashboard_url_from_head_service() -> None:
    service = {
        "metadata": {"name": "test-cluster-head-svc", "namespace": "ns"},
        "spec": {"ports": [{"name": "gcs-server", "port": 6379}, {"name": "dashboard", "port": 8265}]},
    }
    assert (
        dashboard_url_from_head_service(service, "cluster.local")
        == "test-cluster-head-svc.ns.svc.cluster.local:8265"
    )
    assert (
        dashboard_url_from_head_service(service, "corp.example")
        == "test-cluster-head-svc.ns.svc.corp.example:8265"
    )


def test_dashboard_url_needs_a_dashboard_port() -> None:
    service = {
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"ports": [{"name": "client", "port": 1}]},
    }
    with pytest.raises(DashboardPortNotFound, match=r"^dashboard port is not found$"):
        dashboard_url_from_head_service(service, "cluster.local")
