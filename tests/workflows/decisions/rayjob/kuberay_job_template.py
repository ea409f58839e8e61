"""KubeRay's RayJob template of common/job_test.go, shared by the submit-command and submitter tests."""

from __future__ import annotations

from typing import Any

from models.features import FeatureGates
from models.rayjob import RayJob

GATES = FeatureGates()
RESTART_GATE = FeatureGates(sidecar_submitter_restart=True)
ENTRYPOINT = "echo no quote 'single quote' \"double quote\""
# The template's submission fields emptied, as job_test.go's cases that test without them.
TEMPLATE_JOB = {
    "runtimeEnvYAML": "",
    "metadata": {},
    "entrypointNumCpus": 0,
    "entrypointNumGpus": 0,
    "entrypointResources": "",
}


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
