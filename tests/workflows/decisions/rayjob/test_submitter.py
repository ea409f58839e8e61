"""The K8sJobMode submitter Job and the SidecarMode submitter container (rayjob_controller_unit_test.go cases
plus edge cases)."""

from __future__ import annotations

from typing import Any

from models.rayjob import RayJob
from tests.workflows.decisions.rayjob.kuberay_job_template import (
    ENTRYPOINT,
    GATES,
    RESTART_GATE,
    TEMPLATE_JOB,
    health,
    make_job,
)
from workflows.decisions.rayjob.submitter import (
    submitter_container_for_sidecar,
    submitter_job_manifest,
)

# ---- submitter Job (K8sJobMode) ----------------------------------------------------------------------

EXPECTED_ARGS = (
    "until " + health("http://test-url/api/gcs_healthz") + " >/dev/null 2>&1 ; do echo "
    '"Waiting for Ray Dashboard GCS to become healthy at http://test-url ..." ; sleep 2 ; done ; '
    "if ! ray job status --address http://test-url test-job-id >/dev/null 2>&1 ; then "
    "ray job submit --address http://test-url --no-wait --submission-id test-job-id -- "
    "echo no quote 'single quote' \"double quote\" ; fi ; "
    "ray job logs --address http://test-url --follow test-job-id"
)


def job_manifest(job: RayJob, **kwargs: Any) -> dict[str, Any]:
    assert job.spec.ray_cluster_spec is not None
    return submitter_job_manifest(
        job,
        cluster_name="rayjob-sample-abcde",
        cluster_spec=job.spec.ray_cluster_spec,
        workflow_id="rayjob/ns1/rayjob-sample",
        gates=GATES,
        **kwargs,
    )


def test_default_submitter_job() -> None:
    job = make_job(spec=TEMPLATE_JOB, status={"dashboardURL": "test-url", "jobId": "test-job-id"})
    manifest = job_manifest(job)
    ownership = {
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "raypilot",
    }
    assert manifest["apiVersion"] == "batch/v1"
    assert manifest["kind"] == "Job"
    assert manifest["metadata"] == {
        "name": "rayjob-sample",
        "namespace": "ns1",
        "labels": ownership,
        "annotations": {"raypilot.io/workflow-id": "rayjob/ns1/rayjob-sample"},
    }
    assert manifest["spec"]["backoffLimit"] == 2
    template = manifest["spec"]["template"]
    assert template["metadata"]["labels"] == ownership
    assert template["spec"]["restartPolicy"] == "Never"
    assert template["spec"]["containers"] == [
        {
            "name": "ray-job-submitter",
            "image": "rayproject/ray:2.60.0",
            "resources": {
                "limits": {"cpu": "1", "memory": "1Gi"},
                "requests": {"cpu": "500m", "memory": "200Mi"},
            },
            "command": ["/bin/bash", "-ce", "--"],
            "args": [EXPECTED_ARGS],
            "env": [
                {"name": "PYTHONUNBUFFERED", "value": "1"},
                {"name": "RAY_DASHBOARD_ADDRESS", "value": "test-url"},
                {"name": "RAY_JOB_SUBMISSION_ID", "value": "test-job-id"},
            ],
        }
    ]


def test_login_shell_and_submitter_backoff_limit() -> None:
    job = make_job(spec={**TEMPLATE_JOB, "submitterConfig": {"backoffLimit": 5}})
    manifest = job_manifest(job, enable_login_shell=True)
    assert manifest["spec"]["backoffLimit"] == 5
    assert manifest["spec"]["template"]["spec"]["containers"][0]["command"] == ["/bin/bash", "-cel", "--"]


def test_user_template_keeps_its_command_and_fields() -> None:
    template = {
        "metadata": {"labels": {"team": "a"}},
        "spec": {
            "restartPolicy": "OnFailure",
            "nodeSelector": {"pool": "cpu"},
            "containers": [
                {
                    "name": "mine",
                    "image": "me/img",
                    "command": ["user-command"],
                    "env": [{"name": "A", "value": "1"}],
                }
            ],
        },
    }
    job = make_job(spec={**TEMPLATE_JOB, "submitterPodTemplate": template})
    pod = job_manifest(job)["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["user-command"]
    assert "args" not in container
    assert [var["name"] for var in container["env"]] == [
        "A",
        "PYTHONUNBUFFERED",
        "RAY_DASHBOARD_ADDRESS",
        "RAY_JOB_SUBMISSION_ID",
    ]
    assert pod["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert pod["spec"]["restartPolicy"] == "OnFailure"
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"


def test_user_template_without_command_gets_the_submit_command() -> None:
    template = {"spec": {"containers": [{"name": "mine", "image": "me/img"}]}}
    job = make_job(
        spec={**TEMPLATE_JOB, "submitterPodTemplate": template},
        status={"dashboardURL": "test-url", "jobId": "test-job-id"},
    )
    container = job_manifest(job)["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    assert container["args"] == [EXPECTED_ARGS]
    assert container["image"] == "me/img"


def test_token_auth_adds_the_token_from_the_cluster_secret() -> None:
    job = make_job(spec=TEMPLATE_JOB)
    job.spec.ray_cluster_spec.auth_options = {"mode": "token"}  # type: ignore[union-attr,assignment]
    env = job_manifest(job)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[-2:] == [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {
            "name": "RAY_AUTH_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "rayjob-sample-abcde", "key": "auth_token"}},
        },
    ]


def test_sidecar_container() -> None:
    job = make_job(spec={**TEMPLATE_JOB, "submissionMode": "SidecarMode"}, status={"dashboardURL": ""})
    container = submitter_container_for_sidecar(job, "rayjob-sample-abcde", GATES)
    assert container["name"] == "ray-job-submitter"
    assert container["image"] == "rayproject/ray:2.60.0"
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    assert container["args"][0].endswith("-- " + ENTRYPOINT + " ;")
    assert "restartPolicy" not in container
    restarting = submitter_container_for_sidecar(job, "rayjob-sample-abcde", RESTART_GATE)
    assert restarting["restartPolicy"] == "OnFailure"
    assert "--no-wait" in restarting["args"][0]
