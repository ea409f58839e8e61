"""raypilot's node agent beside the real control plane: pods bound to its Node run as local processes, each in
a network namespace of its own, with the status a kubelet reports; the real controllers act on that status.

- a pod runs, turns Ready when its readiness probe passes, and the API server proxies to its address;
- a container that exits is reported terminated with its exit code (restartPolicy Never: the pod Failed);
- the real job controller completes a Job whose pod's command succeeds, and `kubectl logs` shows what it
  printed (the API server reads it from the node agent, as from a kubelet);
- `kubectl logs` of a running container: its last lines, a byte limit, the run before a restart
  (`--previous`), a follow that ends when the container does; timestamps (not kept by the agent) are refused;
- a deleted pod's processes are stopped and the pod is gone; a pod reaches a Service by its DNS name;
- a pod calls the API server in-cluster (KUBERNETES_SERVICE_HOST, the projected ServiceAccount token and CA)
  and is authenticated as its ServiceAccount;
- KubeRay's operator v1.5.0 runs a RayCluster as it builds it (its own head command, probes, init container
  and Services, and Ray's autoscaler beside the head, which reads the cluster's pods with the ServiceAccount
  KubeRay made for it) with real Ray on the node and reports it ready: the worker found the head by the head
  Service's DNS name after KubeRay's init container waited for the GCS, and the dashboard answers through the
  API server's Service proxy (what `--use-kubernetes-proxy` and RAYPILOT_DASHBOARD_ACCESS=proxy use).
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.realkube.conditions import condition_status
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.node import NODE_NAME
from tests.kubes import RealKube
from tests.realkube.waiting import eventually

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.ray,  # real Ray heads (tests/conftest.py runs such files one after another)
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

RAY_WITHIN_S = 240.0  # two real Ray nodes starting on a loaded 2-core machine
PYTHON_SERVER = ["python", "-m", "http.server", "8080"]
RAY_IMAGE = "rayproject/ray:2.52.0"
RESOURCES = {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}}
CLUSTER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "real", "namespace": "default"},
    "spec": {
        "rayVersion": "2.52.0",
        "enableInTreeAutoscaling": True,
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {
                "spec": {"containers": [{"name": "ray-head", "image": RAY_IMAGE, "resources": RESOURCES}]}
            },
        },
        "workerGroupSpecs": [
            {
                "groupName": "workers",
                "replicas": 1,
                "minReplicas": 1,
                "maxReplicas": 1,
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [{"name": "ray-worker", "image": RAY_IMAGE, "resources": RESOURCES}]
                    }
                },
            }
        ],
    },
}


# What this module's tests make in `default`, deleted at its end.
MADE_HERE = (
    ("raycluster", ("real",)),
    ("job", ("once",)),
    ("pod", ("web", "exits", "talks", "backend", "client", "whoami")),
    ("service", ("backend",)),
)


@pytest.fixture(scope="module")
def plane(real_kube_of_real_ray: RealKube) -> Iterator[ControlPlane]:
    """The test process's real stack of real Ray (tests/conftest.py), left as the module found it: what its
    tests made in the `default` namespace is deleted at the end (MADE_HERE), the RayCluster's pods with it."""
    plane = real_kube_of_real_ray.plane
    yield plane
    # By name: `default` also holds the stack's own pods (KubeRay's operator), which nothing would recreate.
    for kind, names in MADE_HERE:
        plane.kubectl("delete", kind, *names, "-n", "default", "--cascade=foreground", "--ignore-not-found")


@pytest.fixture(scope="module")
def pods_directory(real_kube_of_real_ray: RealKube) -> Path:
    """Where the node agent keeps its pods' files (sandbox/nodeagent/containers.py)."""
    return real_kube_of_real_ray.node_directory / "pods"


def apply(plane: ControlPlane, *objects: dict[str, Any]) -> None:
    plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(objects))


def get(plane: ControlPlane, kind: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
    found = plane.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
    return json.loads(found) if found else None


def pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": "python:3.11", "command": command}], **spec},
    }


def test_a_pod_turns_ready_with_its_probe_and_the_api_server_proxies_to_it(plane: ControlPlane) -> None:
    server = pod("web", PYTHON_SERVER)
    server["spec"]["containers"][0]["readinessProbe"] = {
        "httpGet": {"path": "/", "port": 8080},
        "periodSeconds": 1,
    }
    apply(plane, server)
    ready = eventually(
        lambda: (found := get(plane, "pod", "web")) and condition_status(found, "Ready") == "True" and found,
        "web Ready",
    )
    status = ready["status"]
    assert ready["spec"]["nodeName"] == NODE_NAME
    assert status["phase"] == "Running"
    assert ipaddress.IPv4Address(status["podIP"]).is_private
    assert not ipaddress.IPv4Address(status["podIP"]).is_loopback
    (main,) = status["containerStatuses"]
    assert main["ready"] is True
    assert "running" in main["state"]
    assert main["restartCount"] == 0
    # pods/proxy refuses loopback addresses: this answer came over the pod network.
    listing = plane.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/web:8080/proxy/")
    assert "Directory listing" in listing


def test_a_container_that_exits_is_reported_with_its_exit_code(plane: ControlPlane) -> None:
    apply(plane, pod("exits", ["python", "-c", "raise SystemExit(3)"], restartPolicy="Never"))
    failed = eventually(
        lambda: (found := get(plane, "pod", "exits")) and found["status"].get("phase") == "Failed" and found,
        "exits Failed",
    )
    (main,) = failed["status"]["containerStatuses"]
    assert main["state"]["terminated"]["exitCode"] == 3
    assert main["state"]["terminated"]["reason"] == "Error"


def test_the_job_controller_completes_a_job_whose_pod_succeeds(plane: ControlPlane) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": "default"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "python:3.11", "command": ["python", "-c", "print('done')"]}
                    ],
                }
            },
        },
    }
    apply(plane, job)
    eventually(lambda: condition_status(get(plane, "job", "once"), "Complete") == "True", "the Job Complete")
    assert plane.kubectl("logs", "job/once") == "done\n"


# Run 0 prints two lines and fails; run 1 (the restart) prints three and stays up until a file says stop, then
# prints a last line and succeeds.
RESTARTING = """
import os, sys, time
runs = int(open("runs").read()) if os.path.exists("runs") else 0
open("runs", "w").write(str(runs + 1))
for line in range(2 if runs == 0 else 3):
    print(f"run {runs} line {line}", flush=True)
if runs == 0:
    sys.exit(1)
while not os.path.exists("stop"):
    time.sleep(0.1)
print("stopping", flush=True)
"""


def test_kubectl_logs_reads_the_node_agents_container_logs(plane: ControlPlane, pods_directory: Path) -> None:
    apply(plane, pod("talks", ["python", "-c", RESTARTING], restartPolicy="OnFailure"))
    eventually(
        lambda: "run 1 line 2" in plane.kubectl("logs", "talks", check=False), "the restarted run's lines"
    )
    assert plane.kubectl("logs", "talks") == "run 1 line 0\nrun 1 line 1\nrun 1 line 2\n"
    assert plane.kubectl("logs", "talks", "--previous") == "run 0 line 0\nrun 0 line 1\n"
    assert plane.kubectl("logs", "talks", "--tail=1") == "run 1 line 2\n"
    assert plane.kubectl("logs", "talks", "--limit-bytes=5") == "run 1"
    refused = subprocess.run(
        [plane.binary("kubectl"), "--kubeconfig", str(plane.kubeconfig), "logs", "talks", "--timestamps"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0
    assert "keeps no time per log line" in refused.stderr
    follow = subprocess.Popen(
        [plane.binary("kubectl"), "--kubeconfig", str(plane.kubeconfig), "logs", "-f", "talks"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline() == "run 1 line 0\n"  # the follow is open: now the container ends
        home = eventually(lambda: _pod_home(plane, pods_directory, "talks"), "the pod's HOME")
        (home / "stop").touch()
        assert follow.wait(timeout=60) == 0
        assert follow.stdout.read() == "run 1 line 1\nrun 1 line 2\nstopping\n"
    finally:
        follow.kill()


def _pod_home(plane: ControlPlane, pods_directory: Path, name: str) -> Path | None:
    """The pod's working directory (its HOME under the node agent's directory: containers.py)."""
    uid = (get(plane, "pod", name) or {}).get("metadata", {}).get("uid", "")
    homes = list(pods_directory.glob(f"default_{name}_{uid[:8]}/home"))
    return homes[0] if homes else None


def test_a_pod_reaches_a_service_by_name_and_a_deleted_pod_stops(plane: ControlPlane, tmp_path: Path) -> None:
    backend = pod("backend", PYTHON_SERVER)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "backend", "namespace": "default"},
        "spec": {"selector": {"app": "backend"}, "ports": [{"port": 8080}]},
    }
    fetch = "import urllib.request; print(urllib.request.urlopen('http://backend.default.svc.cluster.local:8080/').status)"
    client = pod("client", ["python", "-c", fetch], restartPolicy="OnFailure")
    apply(plane, backend, service)
    eventually(lambda: condition_status(get(plane, "pod", "backend"), "Ready") == "True", "backend Ready")
    apply(plane, client)
    eventually(
        lambda: (get(plane, "pod", "client") or {}).get("status", {}).get("phase") == "Succeeded",
        "client Succeeded",
    )

    plane.kubectl("delete", "pod", "backend", "--wait=false")
    eventually(lambda: get(plane, "pod", "backend") is None, "backend deleted")


# The in-cluster way to the API server: KUBERNETES_SERVICE_HOST/PORT and the projected ServiceAccount files.
WHO_AM_I = """
from kubernetes import client, config
config.load_incluster_config()
review = client.AuthenticationV1Api().create_self_subject_review({"apiVersion": "authentication.k8s.io/v1"})
print(review.status.user_info.username)
assert review.status.user_info.username == "system:serviceaccount:default:default"
"""


def test_a_pod_calls_the_api_server_as_its_service_account(plane: ControlPlane) -> None:
    apply(plane, pod("whoami", ["python", "-c", WHO_AM_I], restartPolicy="Never"))

    def phase() -> str | None:
        found = ((get(plane, "pod", "whoami") or {}).get("status") or {}).get("phase")
        return found if found in ("Succeeded", "Failed") else None

    assert eventually(phase, "whoami finished") == "Succeeded"


def test_kuberay_reports_a_real_ray_cluster_on_the_node_ready(plane: ControlPlane) -> None:
    plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(CLUSTER))

    def cluster_state() -> dict[str, Any] | None:
        found = json.loads(plane.kubectl("get", "raycluster", "real", "-o", "json"))
        status = found.get("status") or {}
        return status if status.get("state") == "ready" and status.get("readyWorkerReplicas") == 1 else None

    status = eventually(cluster_state, "the RayCluster ready with its worker", within=RAY_WITHIN_S)
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    assert conditions.get("HeadPodReady") == "True"
    assert conditions.get("RayClusterProvisioned") == "True"

    proxy = "/api/v1/namespaces/default/services/real-head-svc:dashboard/proxy"
    version = json.loads(plane.kubectl("get", "--raw", f"{proxy}/api/version"))
    assert version["ray_version"] == metadata.version("ray")  # this virtualenv's Ray stands in for the image

    def alive_nodes() -> int:
        nodes = json.loads(plane.kubectl("get", "--raw", f"{proxy}/nodes?view=summary", check=False) or "{}")
        summary = (nodes.get("data") or {}).get("summary") or []
        return sum(1 for node in summary if (node.get("raylet") or {}).get("state") == "ALIVE")

    eventually(lambda: alive_nodes() == 2, "two Ray nodes alive", within=RAY_WITHIN_S)

    # Ray's autoscaler reads its RayCluster and lists the cluster's pods through the API server, authenticated
    # as the ServiceAccount KubeRay made for it (named after the cluster). That it was allowed to is the point
    # here; a restart of its container is a kubelet's ordinary answer to a crash and no part of the claim.
    autoscaler_user = "system:serviceaccount:default:real"

    def autoscaler_reads() -> set[str]:
        return _answered(plane.audit_log, autoscaler_user, codes={200}) & {"get rayclusters", "list pods"}

    eventually(lambda: autoscaler_reads() == {"get rayclusters", "list pods"}, "the autoscaler reading")
    assert not _answered(plane.audit_log, autoscaler_user, codes={401, 403})
    (head,) = json.loads(plane.kubectl("get", "pods", "-l", "ray.io/node-type=head", "-o", "json"))["items"]
    (autoscaler,) = [c for c in head["status"]["containerStatuses"] if c["name"] == "autoscaler"]
    assert "running" in autoscaler["state"]


def _answered(audit_log: Path, user: str, codes: set[int]) -> set[str]:
    """The "<verb> <resource>" of `user`'s requests the API server answered with one of `codes`."""
    answered: set[str] = set()
    for line in audit_log.read_text(errors="replace").splitlines() if audit_log.exists() else ():
        event = json.loads(line)
        code = event.get("responseStatus", {}).get("code")
        if event.get("user", {}).get("username") == user and code in codes:
            answered.add(f"{event.get('verb')} {(event.get('objectRef') or {}).get('resource', '')}")
    return answered
