"""BuildJobSubmitCommand exactly as KubeRay builds it (common/job_test.go cases plus edge cases)."""

from __future__ import annotations

import pytest

from models.rayjob import JobSubmissionMode
from tests.workflows.decisions.rayjob.kuberay_job_template import (
    ENTRYPOINT,
    GATES,
    RESTART_GATE,
    health,
    make_job,
)
from workflows.decisions.rayjob.submitter import (
    SubmitCommandError,
    build_job_submit_command,
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
