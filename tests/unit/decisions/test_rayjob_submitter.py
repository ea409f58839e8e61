"""BuildJobSubmitCommand, the submitter container and Job, and the HTTPMode submit body (KubeRay's job_test.go
and rayjob_controller_unit_test.go cases, plus edge cases)."""

from __future__ import annotations

from typing import Any

import pytest

from models.features import FeatureGates
from models.rayjob import JobSubmissionMode, RayJob
from workflows.decisions.rayjob_submitter import (
    SubmitCommandError,
    build_job_submit_command,
    http_submit_request,
    submitter_container_for_sidecar,
    submitter_job_manifest,
)

GATES = FeatureGates()
RESTART_GATE = FeatureGates(sidecar_submitter_restart=True)
ENTRYPOINT = "echo no quote 'single quote' \"double quote\""


def health(url: str) -> str:
    return (
        "python -c \"import urllib.request; r=urllib.request.urlopen('"
        + url
        + "', timeout=10); exit(0 if b'success' in r.read() else 1)\""
    )


def make_job(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None, **top: Any) -> RayJob:
    """KubeRay's job_test.go template (rayJobTemplate), overridable."""
    base_spec: dict[str, Any] = {
        "runtimeEnvYAML": "test: test",
        "metadata": {"testKey": "testValue"},
        "rayClusterSpec": {
            "rayVersion": "2.6.0",
            "headGroupSpec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "rayproject/ray:2.60.0",
                                "ports": [{"name": "dashboard", "containerPort": 8265}],
                            }
                        ]
                    }
                }
            },
        },
        "entrypoint": ENTRYPOINT,
        "entrypointNumCpus": 1,
        "entrypointNumGpus": 0.5,
        "entrypointResources": '{"Custom_1": 1, "Custom_2": 5.5}',
    }
    base_spec.update(spec or {})
    base_status = {"dashboardURL": "http://127.0.0.1:8265", "jobId": "testJobId"}
    base_status.update(status or {})
    return RayJob.model_validate(
        {
            "metadata": {"name": "rayjob-sample", "namespace": "ns1"},
            "spec": base_spec,
            "status": base_status,
            **top,
        }
    )


SUBMIT_OPTIONS = [
    "--runtime-env-json",
    '"{\\"test\\":\\"test\\"}"',
    "--metadata-json",
    '"{\\"testKey\\":\\"testValue\\"}"',
    "--submission-id",
    "testJobId",
    "--entrypoint-num-cpus",
    "1.000000",
    "--entrypoint-num-gpus",
    "0.500000",
    "--entrypoint-resources",
    '"{\\"Custom_1\\": 1, \\"Custom_2\\": 5.5}"',
]
WAIT_ECHO = '"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..."'


def wait_loop(health_url: str) -> list[str]:
    return [
        "until",
        health(health_url),
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        WAIT_ECHO,
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
    ]


STATUS_CHECK = [
    "if",
    "!",
    "ray",
    "job",
    "status",
    "--address",
    "http://127.0.0.1:8265",
    "testJobId",
    ">/dev/null",
    "2>&1",
    ";",
    "then",
]
FOLLOW = ["fi", ";", "ray", "job", "logs", "--address", "http://127.0.0.1:8265", "--follow", "testJobId"]
SUBMIT = ["ray", "job", "submit", "--address", "http://127.0.0.1:8265"]


def test_k8s_job_mode_command_is_kuberays_exact_string() -> None:
    command = build_job_submit_command(make_job(), JobSubmissionMode.K8S_JOB_MODE, GATES)
    expected = [
        *wait_loop("http://127.0.0.1:8265/api/gcs_healthz"),
        *STATUS_CHECK,
        *SUBMIT,
        "--no-wait",
        *SUBMIT_OPTIONS,
        "--",
        ENTRYPOINT,
        ";",
        *FOLLOW,
    ]
    assert command == expected
    # The reference table's string, as the container runs it.
    assert " ".join(command) == (
        "until " + health("http://127.0.0.1:8265/api/gcs_healthz") + " >/dev/null 2>&1 ; do echo "
        '"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..." ; sleep 2 ; done ; '
        "if ! ray job status --address http://127.0.0.1:8265 testJobId >/dev/null 2>&1 ; then "
        "ray job submit --address http://127.0.0.1:8265 --no-wait "
        '--runtime-env-json "{\\"test\\":\\"test\\"}" --metadata-json "{\\"testKey\\":\\"testValue\\"}" '
        "--submission-id testJobId --entrypoint-num-cpus 1.000000 --entrypoint-num-gpus 0.500000 "
        '--entrypoint-resources "{\\"Custom_1\\": 1, \\"Custom_2\\": 5.5}" '
        "-- echo no quote 'single quote' \"double quote\" ; fi ; "
        "ray job logs --address http://127.0.0.1:8265 --follow testJobId"
    )


def test_sidecar_mode_command_submits_once_and_waits() -> None:
    command = build_job_submit_command(make_job(), JobSubmissionMode.SIDECAR_MODE, GATES)
    assert command == [
        *wait_loop("http://localhost:8265/api/gcs_healthz"),
        *SUBMIT,
        *SUBMIT_OPTIONS,
        "--",
        ENTRYPOINT,
        ";",
    ]


def test_sidecar_mode_with_restart_gate_checks_status_and_follows_logs() -> None:
    command = build_job_submit_command(make_job(), JobSubmissionMode.SIDECAR_MODE, RESTART_GATE)
    assert command == [
        *wait_loop("http://localhost:8265/api/gcs_healthz"),
        *STATUS_CHECK,
        *SUBMIT,
        "--no-wait",
        *SUBMIT_OPTIONS,
        "--",
        ENTRYPOINT,
        ";",
        *FOLLOW,
    ]


def test_sidecar_mode_uses_the_head_dashboard_port() -> None:
    job = make_job()
    head = job.spec.ray_cluster_spec.head_group_spec.template.spec.containers[0]  # type: ignore[union-attr]
    head.ports[0].container_port = 9000
    command = build_job_submit_command(job, JobSubmissionMode.SIDECAR_MODE, GATES)
    assert "localhost:9000/api/gcs_healthz" in command[1]
    assert command[command.index("submit") + 2] == "http://127.0.0.1:9000"


def test_k8s_job_mode_adds_the_scheme_and_skips_empty_options() -> None:
    job = make_job(
        spec={
            "runtimeEnvYAML": "",
            "metadata": {},
            "entrypointNumCpus": 0,
            "entrypointNumGpus": 0,
            "entrypointResources": "",
            "entrypoint": "  python main.py \n",
        },
        status={"dashboardURL": "svc.ns.svc.cluster.local:8265", "jobId": "id-1"},
    )
    command = " ".join(build_job_submit_command(job, JobSubmissionMode.K8S_JOB_MODE, GATES))
    assert command.endswith(
        "ray job submit --address http://svc.ns.svc.cluster.local:8265 --no-wait --submission-id id-1 "
        "-- python main.py ; fi ; ray job logs --address http://svc.ns.svc.cluster.local:8265 --follow id-1"
    )


def test_runtime_env_yaml_is_converted_to_sorted_json() -> None:
    job = make_job(
        spec={"runtimeEnvYAML": 'working_dir: "https://x/a.zip"\npip: ["python-multipart==0.0.6"]\n'}
    )
    command = build_job_submit_command(job, JobSubmissionMode.K8S_JOB_MODE, GATES)
    runtime_env = command[command.index("--runtime-env-json") + 1]
    assert (
        runtime_env == '"{\\"pip\\":[\\"python-multipart==0.0.6\\"],\\"working_dir\\":\\"https://x/a.zip\\"}"'
    )


@pytest.mark.parametrize(
    ("ray_version", "error"),
    [
        ("2.5.0", "the Ray version must be at least 2.6.0 to use the metadata field"),
        ("2.7.0-rc1", "the Ray version must be at least 2.6.0 to use the metadata field"),
        ("not-a-version", "failed to parse Ray version: not-a-version: Invalid Semantic Version"),
        ("2.6.0", None),
        ("v2.60", None),
        ("", None),
    ],
)
def test_metadata_needs_ray_2_6(ray_version: str, error: str | None) -> None:
    job = make_job()
    job.spec.ray_cluster_spec.ray_version = ray_version  # type: ignore[union-attr]
    if error is None:
        assert "--metadata-json" in build_job_submit_command(job, JobSubmissionMode.K8S_JOB_MODE, GATES)
    else:
        with pytest.raises(SubmitCommandError) as raised:
            build_job_submit_command(job, JobSubmissionMode.K8S_JOB_MODE, GATES)
        assert str(raised.value) == error


def test_metadata_with_cluster_selector_assumes_a_recent_ray() -> None:
    job = make_job(spec={"rayClusterSpec": None, "clusterSelector": {"ray.io/cluster": "existing"}})
    command = build_job_submit_command(job, JobSubmissionMode.K8S_JOB_MODE, GATES)
    assert command[command.index("--metadata-json") + 1] == '"{\\"testKey\\":\\"testValue\\"}"'


@pytest.mark.parametrize("mode", [JobSubmissionMode.HTTP_MODE, JobSubmissionMode.INTERACTIVE_MODE])
def test_only_submitter_modes_have_a_command(mode: JobSubmissionMode) -> None:
    with pytest.raises(SubmitCommandError, match="unsupported submission mode"):
        build_job_submit_command(make_job(), mode, GATES)


# ---- submitter Job (K8sJobMode) ----------------------------------------------------------------------

TEMPLATE_JOB = {
    "runtimeEnvYAML": "",
    "metadata": {},
    "entrypointNumCpus": 0,
    "entrypointNumGpus": 0,
    "entrypointResources": "",
}
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


# ---- HTTPMode submit body ---------------------------------------------------------------------------------


def test_http_submit_request_body() -> None:
    body = http_submit_request(make_job(spec={"runtimeEnvYAML": "pip: [requests]\nenv_vars: {A: '1'}"}))
    assert body == {
        "runtime_env": {"pip": ["requests"], "env_vars": {"A": "1"}},
        "metadata": {"testKey": "testValue"},
        "entrypoint_resources": {"Custom_1": 1.0, "Custom_2": 5.5},
        "entrypoint": ENTRYPOINT,
        "submission_id": "testJobId",
        "entrypoint_num_cpus": 1.0,
        "entrypoint_num_gpus": 0.5,
    }
    assert list(body) == [
        "runtime_env",
        "metadata",
        "entrypoint_resources",
        "entrypoint",
        "submission_id",
        "entrypoint_num_cpus",
        "entrypoint_num_gpus",
    ]


def test_http_submit_request_omits_empty_fields() -> None:
    job = make_job(spec={**TEMPLATE_JOB, "entrypoint": " python x.py "}, status={"jobId": ""})
    assert http_submit_request(job) == {"entrypoint": " python x.py "}


@pytest.mark.parametrize("resources", ['{"a": "x"}', "[1]", "{broken", '{"a": true}'])
def test_http_submit_request_rejects_bad_entrypoint_resources(resources: str) -> None:
    with pytest.raises(SubmitCommandError, match="invalid entrypointResources"):
        http_submit_request(make_job(spec={"entrypointResources": resources}))


def test_http_submit_request_rejects_a_runtime_env_that_is_not_a_mapping() -> None:
    with pytest.raises(SubmitCommandError, match="failed to unmarshal RuntimeEnvYAML"):
        http_submit_request(make_job(spec={"runtimeEnvYAML": "- a\n- b"}))
