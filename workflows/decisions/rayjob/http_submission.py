"""The body of HTTPMode's POST /api/jobs/ (KubeRay's `ConvertRayJobToReq`, dashboard_httpclient.go).

Fields follow Go's `omitempty` and KubeRay's field order; `runtime_env` is runtimeEnvYAML decoded as go-yaml
decodes it, `entrypoint_resources` the entrypointResources JSON string decoded into numbers. Unlike the
submitter's command, the entrypoint is sent as written (KubeRay trims it only for the shell command).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from models.rayjob import RayJob
from workflows.decisions.rayjob.goformat import load_go_yaml
from workflows.decisions.rayjob.submitter import SubmitCommandError

__all__ = ["http_submit_request"]


def _entrypoint_resources(text: str) -> dict[str, float]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise SubmitCommandError(f"invalid entrypointResources {text!r}: {error}") from error
    if not isinstance(parsed, dict) or not all(
        isinstance(amount, int | float) and not isinstance(amount, bool) for amount in parsed.values()
    ):
        raise SubmitCommandError(
            f"invalid entrypointResources {text!r}: expected a JSON object of resource name to number"
        )
    return {name: float(amount) for name, amount in parsed.items()}


def http_submit_request(job: RayJob) -> dict[str, Any]:
    """The JSON body of HTTPMode's POST /api/jobs/, with Go's omitempty (in KubeRay's field order)."""
    spec = job.spec
    body: dict[str, Any] = {}
    if spec.runtime_env_yaml:
        try:
            runtime_env = load_go_yaml(spec.runtime_env_yaml)
        except yaml.YAMLError as error:
            raise SubmitCommandError(
                f"failed to unmarshal RuntimeEnvYAML: {spec.runtime_env_yaml}: {error}"
            ) from error
        if runtime_env is not None and not isinstance(runtime_env, dict):
            raise SubmitCommandError(
                f"failed to unmarshal RuntimeEnvYAML: {spec.runtime_env_yaml}: not a mapping"
            )
        if runtime_env:
            body["runtime_env"] = runtime_env
    if spec.metadata:
        body["metadata"] = dict(spec.metadata)
    if spec.entrypoint_resources:
        resources = _entrypoint_resources(spec.entrypoint_resources)
        if resources:
            body["entrypoint_resources"] = resources
    body["entrypoint"] = spec.entrypoint
    if job.status.job_id:
        body["submission_id"] = job.status.job_id
    if spec.entrypoint_num_cpus:
        body["entrypoint_num_cpus"] = spec.entrypoint_num_cpus
    if spec.entrypoint_num_gpus:
        body["entrypoint_num_gpus"] = spec.entrypoint_num_gpus
    return body
