"""The simulated sandbox driven only through the official kubernetes client (and the control port), as
raypilot's activities and later tests use it: RayCluster -> pods, Service, status; workers; pod health;
fault hooks; Jobs."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

import kubernetes
import pytest

from sandbox.testing import SandboxThread, poll_until, raycluster_manifest, ready_raycluster

NS = "default"


@pytest.fixture(scope="module")
def apis(sandbox_simulated: SandboxThread) -> dict[str, Any]:
    client = sandbox_simulated.api_client()
    return {
        "core": kubernetes.client.CoreV1Api(client),
        "batch": kubernetes.client.BatchV1Api(client),
        "custom": kubernetes.client.CustomObjectsApi(client),
    }


def create_cluster(apis: dict[str, Any], name: str, **options: Any) -> dict[str, Any]:
    apis["custom"].create_namespaced_custom_object(
        "ray.io", "v1", NS, "rayclusters", raycluster_manifest(name, **options)
    )
    return poll_until(lambda: ready_raycluster(apis["custom"], NS, name), within=20, what=f"{name} ready")


def ray_pods(apis: dict[str, Any], cluster: str, node_type: str) -> list[Any]:
    selector = f"ray.io/cluster={cluster},ray.io/node-type={node_type}"
    return [
        p
        for p in apis["core"].list_namespaced_pod(NS, label_selector=selector).items
        if p.metadata.deletion_timestamp is None
    ]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def condition(obj: dict[str, Any], kind: str) -> str | None:
    return next((c["status"] for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), None)


def test_raycluster_gets_head_pod_service_and_ready_status(apis: dict[str, Any]) -> None:
    cluster = create_cluster(
        apis, "sim", workers=2, env={"APP_VERSION": "v7"}, head_labels={"ray.io/serve": "true"}
    )
    [head] = ray_pods(apis, "sim", "head")
    assert head.metadata.name.startswith("sim-head-")
    assert head.metadata.labels["ray.io/serve"] == "true"
    assert head.metadata.owner_references[0].kind == "RayCluster"
    assert head.status.phase == "Running"
    assert head.status.container_statuses[0].name == "ray-head"
    assert head.status.container_statuses[0].state.running is not None
    assert len(ray_pods(apis, "sim", "worker")) == 2
    service = apis["core"].read_namespaced_service("sim-head-svc", NS)
    assert {(p.name, p.port) for p in service.spec.ports} == {
        ("dashboard", 8265),
        ("serve", 8000),
        ("client", 10001),
        ("gcs-server", 6379),
    }
    status = cluster["status"]
    assert status["head"] == {
        "podName": head.metadata.name,
        "podIP": head.status.pod_ip,
        "serviceName": "sim-head-svc",
        "serviceIP": service.spec.cluster_ip,
    }
    assert condition(cluster, "RayClusterProvisioned") == "True"
    assert (status["desiredWorkerReplicas"], status["readyWorkerReplicas"]) == (2, 2)
    assert get_json(f"http://{service.spec.cluster_ip}:8265/api/version")["version"]
    assert get_json(f"http://{head.status.pod_ip}:8265/api/version")["version"]
    proxied = apis["core"].connect_get_namespaced_service_proxy_with_path(
        "sim-head-svc:8265", NS, "api/version"
    )
    assert "version" in str(proxied)


def test_worker_scaling_and_group_suspend(apis: dict[str, Any]) -> None:
    create_cluster(apis, "scale", workers=1)

    def patch_group(**fields: Any) -> None:
        # Read-modify-write as any client must: the controller's status writes move resourceVersion on.
        for _attempt in range(10):
            cluster = apis["custom"].get_namespaced_custom_object("ray.io", "v1", NS, "rayclusters", "scale")
            cluster["spec"]["workerGroupSpecs"][0].update(fields)
            try:
                apis["custom"].replace_namespaced_custom_object(
                    "ray.io", "v1", NS, "rayclusters", "scale", cluster
                )
                return
            except kubernetes.client.ApiException as err:
                if err.status != 409:
                    raise
        raise AssertionError("the RayCluster kept conflicting")

    patch_group(replicas=3)
    poll_until(lambda: len(ray_pods(apis, "scale", "worker")) == 3, within=10, what="3 workers")
    patch_group(replicas=1)
    poll_until(lambda: len(ray_pods(apis, "scale", "worker")) == 1, within=10, what="1 worker")
    patch_group(suspend=True)
    poll_until(lambda: not ray_pods(apis, "scale", "worker"), within=10, what="suspended group has no pods")
    cluster = poll_until(lambda: ready_raycluster(apis["custom"], NS, "scale"), within=10)
    assert cluster["status"]["desiredWorkerReplicas"] == 0
    assert len(ray_pods(apis, "scale", "head")) == 1


def test_failed_head_pod_is_deleted_and_recreated(apis: dict[str, Any]) -> None:
    create_cluster(apis, "heal", workers=0)
    [head] = ray_pods(apis, "heal", "head")
    apis["core"].patch_namespaced_pod_status(head.metadata.name, NS, {"status": {"phase": "Failed"}})

    def new_ready_head() -> bool:
        heads = ray_pods(apis, "heal", "head")
        return (
            len(heads) == 1
            and heads[0].metadata.name != head.metadata.name
            and ready_raycluster(apis["custom"], NS, "heal") is not None
        )

    poll_until(new_ready_head, within=20, what="a new head pod")


def test_dashboard_fault_hooks_over_http(sandbox_simulated: SandboxThread, apis: dict[str, Any]) -> None:
    create_cluster(apis, "faulty", workers=0)
    [head] = ray_pods(apis, "faulty", "head")
    control = json.loads((sandbox_simulated.sandbox.workdir / "control.json").read_text())["url"]

    def post(action: str) -> Any:
        request = urllib.request.Request(f"{control}/sandbox/dashboards/{NS}/faulty/{action}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    assert post("stop")["action"] == "stop"

    def head_condition() -> str | None:
        cluster = apis["custom"].get_namespaced_custom_object("ray.io", "v1", NS, "rayclusters", "faulty")
        return condition(cluster, "HeadPodReady")

    poll_until(lambda: head_condition() == "False", within=10, what="HeadPodReady False")
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        get_json(f"http://{head.status.pod_ip}:8265/api/version")
    [same] = ray_pods(apis, "faulty", "head")
    assert same.metadata.name == head.metadata.name  # restartPolicy Always: the kubelet restarts in place
    assert same.status.container_statuses[0].state.terminated is not None
    post("start")
    poll_until(lambda: head_condition() == "True", within=10, what="HeadPodReady True again")
    assert get_json(f"http://{head.status.pod_ip}:8265/api/version")["version"]
    unknown = urllib.request.Request(f"{control}/sandbox/dashboards/{NS}/nope/stop", method="POST")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(unknown, timeout=10)
    assert missing.value.code == 404


def job_manifest(
    name: str, script: str, backoff_limit: int = 6, env: dict[str, str] | None = None
) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "busybox",
        "command": ["/bin/bash", "-ce", "--"],
        "args": [script],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def finished_job(apis: dict[str, Any], name: str) -> Any:
    status = apis["batch"].read_namespaced_job_status(name, NS).status
    done = [c for c in status.conditions or [] if c.type in ("Complete", "Failed") and c.status == "True"]
    return status if done else None


def test_job_reaches_the_dashboard_by_service_dns_name_and_completes(apis: dict[str, Any]) -> None:
    create_cluster(apis, "jobs", workers=0)
    script = (
        'python -c "import os, urllib.request as r; '
        "print(r.urlopen('http://' + os.environ['RAY_DASHBOARD_ADDRESS'] + '/api/version').status)\""
    )
    env = {"RAY_DASHBOARD_ADDRESS": f"jobs-head-svc.{NS}.svc.cluster.local:8265"}
    apis["batch"].create_namespaced_job(NS, job_manifest("reach", script, env=env))
    status = poll_until(lambda: finished_job(apis, "reach"), within=30, what="Job finished")
    types = {c.type: c for c in status.conditions}
    assert types["Complete"].status == "True", status
    assert types["Complete"].last_transition_time is not None
    assert status.succeeded == 1
    [pod] = apis["core"].list_namespaced_pod(NS, label_selector="job-name=reach").items
    assert pod.status.phase == "Succeeded"
    assert pod.status.container_statuses[0].state.terminated.exit_code == 0


def test_job_failure_honours_backoff_limit(apis: dict[str, Any]) -> None:
    apis["batch"].create_namespaced_job(NS, job_manifest("fails", "exit 4", backoff_limit=2))
    status = poll_until(lambda: finished_job(apis, "fails"), within=30, what="Job failed")
    failed = next(c for c in status.conditions if c.type == "Failed")
    assert (failed.status, failed.reason) == ("True", "BackoffLimitExceeded")
    assert status.failed == 3
    pods = apis["core"].list_namespaced_pod(NS, label_selector="job-name=fails").items
    assert sorted(p.status.container_statuses[0].state.terminated.exit_code for p in pods) == [4, 4, 4]


def test_deleting_a_job_kills_its_process(sandbox_simulated: SandboxThread, apis: dict[str, Any]) -> None:
    apis["batch"].create_namespaced_job(NS, job_manifest("sleepy", "echo started; sleep 300"))
    poll_until(lambda: apis["batch"].read_namespaced_job_status("sleepy", NS).status.active == 1, within=10)
    pids = poll_until(lambda: sandbox_simulated.sandbox.jobs.pids, within=10)
    apis["batch"].delete_namespaced_job("sleepy", NS, propagation_policy="Background")

    def gone() -> bool:
        return not any(os.path.exists(f"/proc/{pid}") and not _zombie(pid) for pid in pids)

    poll_until(gone, within=10, what="the Job's process killed")
    poll_until(
        lambda: not apis["core"].list_namespaced_pod(NS, label_selector="job-name=sleepy").items, within=10
    )


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_status_is_not_rewritten_when_nothing_changes(apis: dict[str, Any]) -> None:
    cluster = create_cluster(apis, "quiet", workers=1)
    version = cluster["metadata"]["resourceVersion"]
    time.sleep(0.5)  # a quiet period: controllers must not keep writing an unchanged status
    again = apis["custom"].get_namespaced_custom_object("ray.io", "v1", NS, "rayclusters", "quiet")
    assert again["metadata"]["resourceVersion"] == version
