"""How a RayJob's Ray job is submitted by a submitter: its shell command, its container and batch/v1 Job.

KubeRay functions: `common.BuildJobSubmitCommand`, `common.GetSubmitterTemplate`,
`common.GetDefaultSubmitterContainer`, `configureSubmitterContainer`, `getSubmitterTemplate`,
`getSubmitterContainer` and `createNewK8sJob` (rayjob_controller.go) and `SetContainerTokenAuthEnvVars`
(common/pod.go). HTTPMode's request body is `rayjob_http_submission`.

The command is byte-for-byte KubeRay's (Go `strconv.Quote` for quoted values, `%f` for resource amounts, Go
JSON for metadata and the runtime env). Where raypilot differs: the Job and its pod template are labelled
`app.kubernetes.io/created-by=raypilot` (KubeRay writes kuberay-operator) and carry raypilot's workflow-id
annotation (contract section 5); the owner reference is left to the activity, which knows the RayJob's uid.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

import yaml

from models.base import dump_manifest
from models.features import FeatureGates
from models.naming import (
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_SUBMITTER_BACKOFF_LIMIT,
    KIND_RAYJOB,
    RAY_CONTAINER_INDEX,
    SUBMITTER_CONTAINER_NAME,
    ownership_labels,
    submitter_job_name,
    workflow_annotations,
)
from models.raycluster import AuthMode, RayClusterSpec
from models.rayjob import JobSubmissionMode, RayJob
from workflows.decisions.rayjob.goformat import (
    go_format_float32_f,
    go_json_marshal,
    go_quote,
    yaml_to_go_json,
)

__all__ = [
    "SubmitCommandError",
    "build_job_submit_command",
    "default_submitter_container",
    "submitter_container_for_sidecar",
    "submitter_job_manifest",
]

GCS_HEALTH_PATH = "api/gcs_healthz"
GCS_HEALTH_TIMEOUT_SECONDS = 10
_PYTHON_HEALTH_COMMAND = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout={timeout}); "
    "exit(0 if b'success' in r.read() else 1)\""
)
_DASHBOARD_PORT_NAME = "dashboard"
_METADATA_MIN_RAY_VERSION = (2, 6, 0)
# Masterminds/semver's loose version syntax ("2.6", "v2.6.0", "2.6.0-rc1+build").
_SEMVER = re.compile(
    r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


class SubmitCommandError(ValueError):
    """The spec cannot be turned into a submission (KubeRay's message)."""


def _metadata_json(job: RayJob) -> str:
    """--metadata-json needs Ray >= 2.6.0 when rayClusterSpec.rayVersion says so (unset: assumed recent)."""
    cluster_spec = job.spec.ray_cluster_spec
    version = cluster_spec.ray_version if cluster_spec is not None else ""
    if version:
        match = _SEMVER.fullmatch(version)
        if match is None:
            raise SubmitCommandError(f"failed to parse Ray version: {version}: Invalid Semantic Version")
        numbers = tuple(int(part or 0) for part in match.group(1, 2, 3))
        # A pre-release never satisfies a constraint without one (Masterminds/semver rule).
        if match.group(4) is not None or numbers < _METADATA_MIN_RAY_VERSION:
            raise SubmitCommandError("the Ray version must be at least 2.6.0 to use the metadata field")
    return go_json_marshal(job.spec.metadata)


def _runtime_env_json(job: RayJob) -> str:
    try:
        return yaml_to_go_json(job.spec.runtime_env_yaml)
    except yaml.YAMLError as error:
        raise SubmitCommandError(f"error converting YAML to JSON: {error}") from error


def _head_dashboard_port(job: RayJob) -> int:
    cluster_spec = job.spec.ray_cluster_spec
    if cluster_spec is None or not cluster_spec.head_group_spec.template.spec.containers:
        return DEFAULT_DASHBOARD_PORT
    head = cluster_spec.head_group_spec.template.spec.containers[RAY_CONTAINER_INDEX]
    port = head.port_number(_DASHBOARD_PORT_NAME)
    return DEFAULT_DASHBOARD_PORT if port is None else port


def build_job_submit_command(job: RayJob, mode: JobSubmissionMode, gates: FeatureGates) -> list[str]:
    """KubeRay's submitter command as tokens (the container runs them joined by single spaces).

    K8sJobMode talks to `http://<status.dashboardURL>`; SidecarMode to `http://127.0.0.1:<head dashboard
    port>`. Both first wait for the GCS to be healthy. K8sJobMode (and SidecarMode with
    SidecarSubmitterRestart) may run again, so they submit only if `ray job status` does not know the job,
    with --no-wait, then follow its logs.
    """
    status = job.status
    if mode == JobSubmissionMode.SIDECAR_MODE:
        port = _head_dashboard_port(job)
        address = f"http://127.0.0.1:{port}"
        health_url = f"http://localhost:{port}/{GCS_HEALTH_PATH}"
    elif mode == JobSubmissionMode.K8S_JOB_MODE:
        address = status.dashboard_url
        if not address.startswith("http://"):
            address = "http://" + address
        health_url = f"{address}/{GCS_HEALTH_PATH}"
    else:
        raise SubmitCommandError(f"unsupported submission mode for job submit command: {mode}")
    job_id = status.job_id
    spec = job.spec
    health = _PYTHON_HEALTH_COMMAND.format(url=health_url, timeout=GCS_HEALTH_TIMEOUT_SECONDS)
    waiting = go_quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
    cmd = [
        "until",
        health,
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        waiting,
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
    ]
    needs_status_check = mode == JobSubmissionMode.K8S_JOB_MODE or gates.sidecar_submitter_restart
    if needs_status_check:
        cmd += [
            "if",
            "!",
            "ray",
            "job",
            "status",
            "--address",
            address,
            job_id,
            ">/dev/null",
            "2>&1",
            ";",
            "then",
        ]
    cmd += ["ray", "job", "submit", "--address", address]
    if needs_status_check:
        cmd.append("--no-wait")
    if spec.runtime_env_yaml:
        cmd += ["--runtime-env-json", go_quote(_runtime_env_json(job))]
    if spec.metadata:
        cmd += ["--metadata-json", go_quote(_metadata_json(job))]
    if job_id:
        cmd += ["--submission-id", job_id]
    if spec.entrypoint_num_cpus > 0:
        cmd += ["--entrypoint-num-cpus", go_format_float32_f(spec.entrypoint_num_cpus)]
    if spec.entrypoint_num_gpus > 0:
        cmd += ["--entrypoint-num-gpus", go_format_float32_f(spec.entrypoint_num_gpus)]
    if spec.entrypoint_resources:
        cmd += ["--entrypoint-resources", go_quote(spec.entrypoint_resources)]
    cmd += ["--", spec.entrypoint.strip(), ";"]
    if needs_status_check:
        cmd += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job_id]
    return cmd


def default_submitter_container(cluster_spec: RayClusterSpec) -> dict[str, Any]:
    """The submitter container KubeRay uses without a template: the head's image (no version skew)."""
    container: dict[str, Any] = {"name": SUBMITTER_CONTAINER_NAME}
    head_containers = cluster_spec.head_group_spec.template.spec.containers
    image = head_containers[RAY_CONTAINER_INDEX].image if head_containers else None
    if image is not None:
        container["image"] = image
    container["resources"] = {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "200Mi"},
    }
    return container


def _bash_command(enable_login_shell: bool) -> list[str]:
    # -e: stop at the first failing command, so a failed submission fails the container.
    return ["/bin/bash", "-cel" if enable_login_shell else "-ce", "--"]


def _check_name(name: str) -> str:
    # KubeRay's CheckName: keep the last 50 characters; no leading digit or punctuation.
    if len(name) > 50:
        name = name[len(name) - 50 :]
    if name[:1].isdigit():
        name = "r" + name[1:]
    if name and unicodedata.category(name[0]).startswith("P"):
        name = "r" + name[1:]
    return name


def _add_env(container: dict[str, Any], name: str, **value: Any) -> None:
    container.setdefault("env", []).append({"name": name, **value})


def _has_env(container: Mapping[str, Any], name: str) -> bool:
    return any(var.get("name") == name for var in container.get("env") or [])


def _configure_submitter_container(
    container: dict[str, Any],
    job: RayJob,
    mode: JobSubmissionMode,
    *,
    cluster_name: str,
    cluster_spec: RayClusterSpec,
    gates: FeatureGates,
    enable_login_shell: bool,
) -> None:
    command = build_job_submit_command(job, mode, gates)
    if not container.get("command") or mode == JobSubmissionMode.SIDECAR_MODE:
        container["command"] = _bash_command(enable_login_shell)
        container["args"] = [" ".join(command)]
    _add_env(container, "PYTHONUNBUFFERED", value="1")
    _add_env(container, "RAY_DASHBOARD_ADDRESS", value=job.status.dashboard_url)
    _add_env(container, "RAY_JOB_SUBMISSION_ID", value=job.status.job_id)
    auth = cluster_spec.auth_options
    # Kubernetes-token auth is rejected for RayJobs by validation, so only the shared-secret token remains.
    if auth is not None and auth.mode == AuthMode.TOKEN:
        if not _has_env(container, "RAY_AUTH_MODE"):
            _add_env(container, "RAY_AUTH_MODE", value=AuthMode.TOKEN.value)
        secret = auth.secret_name or _check_name(cluster_name)
        if not _has_env(container, "RAY_AUTH_TOKEN"):
            _add_env(
                container, "RAY_AUTH_TOKEN", valueFrom={"secretKeyRef": {"name": secret, "key": "auth_token"}}
            )


def submitter_container_for_sidecar(
    job: RayJob, cluster_name: str, gates: FeatureGates, *, enable_login_shell: bool = False
) -> dict[str, Any]:
    """The submitter container appended to the head Pod in SidecarMode (restarts on failure only with the
    SidecarSubmitterRestart gate; the head Pod itself never restarts)."""
    cluster_spec = job.spec.ray_cluster_spec
    if cluster_spec is None:
        raise SubmitCommandError("SidecarMode needs spec.rayClusterSpec")
    container = default_submitter_container(cluster_spec)
    _configure_submitter_container(
        container,
        job,
        JobSubmissionMode.SIDECAR_MODE,
        cluster_name=cluster_name,
        cluster_spec=cluster_spec,
        gates=gates,
        enable_login_shell=enable_login_shell,
    )
    if gates.sidecar_submitter_restart:
        container["restartPolicy"] = "OnFailure"
    return container


def submitter_job_manifest(
    job: RayJob,
    *,
    cluster_name: str,
    cluster_spec: RayClusterSpec,
    workflow_id: str,
    gates: FeatureGates,
    enable_login_shell: bool = False,
) -> dict[str, Any]:
    """The K8sJobMode submitter batch/v1 Job, named after the RayJob.

    `cluster_name` / `cluster_spec` are those of the RayCluster actually used (the selected one in
    clusterSelector mode). The template is spec.submitterPodTemplate, or a pod with the default container and
    restartPolicy Never; its first container gets the command (only if it has none) and the env KubeRay sets.
    """
    labels = ownership_labels(KIND_RAYJOB, job.metadata.name)
    annotations = workflow_annotations(workflow_id)
    if job.spec.submitter_pod_template is not None:
        template = copy.deepcopy(dump_manifest(job.spec.submitter_pod_template))
    else:
        template = {
            "spec": {"containers": [default_submitter_container(cluster_spec)], "restartPolicy": "Never"}
        }
    containers = template.setdefault("spec", {}).get("containers") or []
    if not containers:
        raise SubmitCommandError("spec.submitterPodTemplate must have at least one container")
    _configure_submitter_container(
        containers[RAY_CONTAINER_INDEX],
        job,
        JobSubmissionMode.K8S_JOB_MODE,
        cluster_name=cluster_name,
        cluster_spec=cluster_spec,
        gates=gates,
        enable_login_shell=enable_login_shell,
    )
    metadata = template.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    backoff = job.spec.submitter_config.backoff_limit if job.spec.submitter_config is not None else None
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": submitter_job_name(job.metadata.name),
            "namespace": job.metadata.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "backoffLimit": DEFAULT_SUBMITTER_BACKOFF_LIMIT if backoff is None else backoff,
            "template": template,
        },
    }
