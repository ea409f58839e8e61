"""The sandbox with real Ray: a RayCluster's dashboard through its head Service and the API's Service proxy,
and a K8sJobMode-like submitter Job running the real `ray job submit` against it."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sandbox.controllers.job_pods import LOG_PATH_ANNOTATION
from sandbox.testing import SandboxThread, poll_until, raycluster_manifest, ready_raycluster

pytestmark = pytest.mark.ray

CLUSTER = "real"


@pytest.fixture(scope="module")
def ready_cluster(sandbox_real: SandboxThread) -> dict[str, Any]:
    custom = kubernetes.client.CustomObjectsApi(sandbox_real.api_client())
    custom.create_namespaced_custom_object(
        "ray.io", "v1", "default", "rayclusters", raycluster_manifest(CLUSTER, env={"APP_VERSION": "real-v1"})
    )
    return poll_until(
        lambda: ready_raycluster(custom, "default", CLUSTER), within=120, what="real RayCluster ready"
    )


def test_dashboard_answers_through_head_service_and_api_proxy(
    sandbox_real: SandboxThread, ready_cluster: dict[str, Any]
) -> None:
    core = kubernetes.client.CoreV1Api(sandbox_real.api_client())
    service = core.read_namespaced_service(f"{CLUSTER}-head-svc", "default")
    assert ready_cluster["status"]["head"]["serviceIP"] == service.spec.cluster_ip
    with urllib.request.urlopen(f"http://{service.spec.cluster_ip}:8265/api/version", timeout=10) as response:
        direct = json.loads(response.read())
    assert direct["ray_version"] == "2.60.0"
    proxied = core.connect_get_namespaced_service_proxy_with_path(
        f"{CLUSTER}-head-svc:dashboard", "default", "api/version"
    )
    proxied = proxied if isinstance(proxied, dict) else json.loads(str(proxied).replace("'", '"'))
    assert proxied["session_name"] == direct["session_name"]
    [head] = core.list_namespaced_pod(
        "default", label_selector=f"ray.io/cluster={CLUSTER},ray.io/node-type=head"
    ).items
    assert head.status.pod_ip == ready_cluster["status"]["head"]["podIP"]
    assert sandbox_real.sandbox.pids, "the real head's processes are known by PID"


# The shape of KubeRay's K8sJobMode submitter: wait for the dashboard, submit once, follow the logs.
SUBMITTER_SCRIPT = (
    "until python -c \"import urllib.request as u; u.urlopen('http://$RAY_DASHBOARD_ADDRESS/api/gcs_healthz',"
    ' timeout=10)" >/dev/null 2>&1 ; do echo waiting for the dashboard ; sleep 1 ; done ; '
    "if ! ray job status --address http://$RAY_DASHBOARD_ADDRESS $RAY_JOB_SUBMISSION_ID >/dev/null 2>&1 ;"
    " then ray job submit --address http://$RAY_DASHBOARD_ADDRESS --no-wait"
    " --submission-id $RAY_JOB_SUBMISSION_ID -- "
    "python -c \"import os, ray; ray.init(); print('sum', sum(ray.get([ray.remote(lambda x: 2 * x).remote(i) "
    "for i in range(4)])), os.environ.get('APP_VERSION'))\" ; fi ; "
    "ray job logs --address http://$RAY_DASHBOARD_ADDRESS --follow $RAY_JOB_SUBMISSION_ID"
)


def test_submitter_job_runs_real_ray_job_submit(
    sandbox_real: SandboxThread, ready_cluster: dict[str, Any]
) -> None:
    client = sandbox_real.api_client()
    batch, core = kubernetes.client.BatchV1Api(client), kubernetes.client.CoreV1Api(client)
    env = [
        {"name": "RAY_DASHBOARD_ADDRESS", "value": f"{CLUSTER}-head-svc.default.svc.cluster.local:8265"},
        {"name": "RAY_JOB_SUBMISSION_ID", "value": "sandbox-submit-1"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    container = {
        "name": "ray-job-submitter",
        "image": "rayproject/ray:2.60.0",
        "command": ["/bin/bash", "-ce", "--"],
        "args": [SUBMITTER_SCRIPT],
        "env": env,
    }
    job = {
        "metadata": {"name": "submitter"},
        "spec": {
            "backoffLimit": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }
    batch.create_namespaced_job("default", job)

    def finished() -> Any:
        status = batch.read_namespaced_job_status("submitter", "default").status
        done = {c.type for c in status.conditions or [] if c.status == "True"} & {"Complete", "Failed"}
        return status if done else None

    status = poll_until(finished, within=180, interval=0.5, what="submitter Job finished")
    [pod] = core.list_namespaced_pod("default", label_selector="job-name=submitter").items
    log_text = Path(pod.metadata.annotations[LOG_PATH_ANNOTATION]).read_text()
    assert {c.type for c in status.conditions if c.status == "True"} >= {"Complete", "SuccessCriteriaMet"}, (
        log_text
    )
    assert status.succeeded == 1
    assert "sum 12 real-v1" in log_text
    service_ip = ready_cluster["status"]["head"]["serviceIP"]
    with urllib.request.urlopen(
        f"http://{service_ip}:8265/api/jobs/sandbox-submit-1", timeout=10
    ) as response:
        assert json.loads(response.read())["status"] == "SUCCEEDED"
