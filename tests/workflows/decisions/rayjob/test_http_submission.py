"""The body of HTTPMode's POST /api/jobs/ (ConvertRayJobToReq)."""

from __future__ import annotations

from typing import Any

import pytest

from models.rayjob import RayJob
from tests.workflows.decisions.rayjob.kuberay_job_template import ENTRYPOINT, TEMPLATE_JOB
from workflows.decisions.rayjob.http_submission import http_submit_request
from workflows.decisions.rayjob.submitter import SubmitCommandError


def make_job(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> RayJob:
    """KubeRay's job_test.go template, overridable."""
    base_spec: dict[str, Any] = {
        "runtimeEnvYAML": "test: test",
        "metadata": {"testKey": "testValue"},
        "clusterSelector": {"ray.io/cluster": "c"},
        "entrypoint": ENTRYPOINT,
        "entrypointNumCpus": 1,
        "entrypointNumGpus": 0.5,
        "entrypointResources": '{"Custom_1": 1, "Custom_2": 5.5}',
        "submissionMode": "HTTPMode",
        **(spec or {}),
    }
    status = {"dashboardURL": "http://127.0.0.1:8265", "jobId": "testJobId", **(status or {})}
    return RayJob.model_validate({"metadata": {"name": "rayjob-sample"}, "spec": base_spec, "status": status})


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
