"""`raypilot sandbox up` and `down` on the real stack (the only Kubernetes `up` serves), as a user runs them:
`up` returns once the real stack serves (its Node Ready, deploy/'s CRDs and RBAC installed) and prints the
admin's KUBECONFIG; the worker's kubeconfig holds exactly deploy/'s RBAC; a second `up` finds it running; a
pod runs on the node; `down` stops every process the stack started and removes the pod's network namespace.
`up --ray simulated --foreground` serves the same stack with pods of simulated Ray until Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.realkube.conditions import is_ready
from sandbox.realkube.controlplane import kube_dir
from sandbox.realkube.node import NODE_NAME
from sandbox.testing import raycluster_manifest
from tests.readiness import with_quick_readiness
from tests.realkube.waiting import eventually

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "containers": [{"name": "main", "image": "python:3.11", "command": ["python", "-m", "http.server"]}]
    },
}


def sandbox_cli(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "sandbox.main", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=420, check=False)


def kubectl(kubeconfig: Path, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(kube_dir() / "bin" / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=input_text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def network_namespaces() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in listed.splitlines() if line.strip()}


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (the stack's servers, the node agent, the pods' containers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def node_ready(kubeconfig: Path) -> bool:
    return is_ready(json.loads(kubectl(kubeconfig, "get", "node", NODE_NAME, "-o", "json").stdout))


def test_up_serves_the_real_stack_and_down_removes_it(tmp_path: Path) -> None:
    workdir = tmp_path / "real"
    namespaces_before = network_namespaces()
    kube_dir()  # built (the default is the real stack only where `make kube` has run)
    up = sandbox_cli("up", "--dir", str(workdir))
    assert up.returncode == 0, up.stderr
    admin = workdir / "kubeconfig"
    assert f"KUBECONFIG={admin}" in up.stdout.splitlines()
    state = json.loads((workdir / "state.json").read_text())
    pid, worker = state["pid"], Path(state["workerKubeconfig"])
    try:
        assert state["kube"] == "real"
        assert node_ready(admin)

        # deploy/'s RBAC, enforced by the real API server: the worker creates RayClusters, reads one Secret by
        # name but never lists them, and leaves creating raypilot.io objects to their owners.
        def can(*what: str) -> str:
            return kubectl(worker, "auth", "can-i", *what).stdout.strip()

        assert can("create", "rayclusters.ray.io") == "yes"
        assert can("get", "secrets") == "yes"
        assert can("list", "secrets") == "no"
        assert can("create", "rayjobs.raypilot.io") == "no"
        again = sandbox_cli("up", "--kube", "real", "--dir", str(workdir))
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stderr
        assert json.loads((workdir / "state.json").read_text())["pid"] == pid

        created = kubectl(admin, "apply", "-f", "-", input_text=json.dumps(POD))
        assert created.returncode == 0, created.stderr

        def running() -> bool:
            pod = json.loads(kubectl(admin, "get", "pod", "web", "-o", "json").stdout)
            return bool(pod.get("status", {}).get("phase") == "Running")

        eventually(running, "the pod running on the node")
        # Only this stack's node's namespaces (rp<index>p<n>, index from its address 10.200.<index>.1): other
        # node agents on this machine (another test's) make theirs meanwhile.
        node = json.loads(kubectl(admin, "get", "node", NODE_NAME, "-o", "json").stdout)
        internal = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        prefix = f"rp{internal.split('.')[2]}p"
        pod_namespaces = {ns for ns in network_namespaces() - namespaces_before if ns.startswith(prefix)}
        assert pod_namespaces, "the pod got no network namespace of its own"
        processes = descendants(pid)
        # etcd, kube-apiserver, kube-controller-manager, KubeRay, node agent, Gateway controller, the pod
        assert len(processes) >= 7
    finally:
        down = sandbox_cli("down", "--dir", str(workdir))
    assert down.returncode == 0, down.stderr
    assert not alive(pid)
    assert not [process for process in processes if alive(process)]
    assert not pod_namespaces & network_namespaces()
    assert not (workdir / "state.json").exists()


def test_up_with_simulated_ray_in_the_foreground_serves_until_ctrl_c(tmp_path: Path) -> None:
    workdir = tmp_path / "simulated"
    kube_dir()
    argv = [sys.executable, "-m", "sandbox.main", "up", "--ray", "simulated", "--dir", str(workdir)]
    process = subprocess.Popen(
        [*argv, "--foreground"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        admin = workdir / "kubeconfig"
        assert process.stdout.readline().strip() == f"KUBECONFIG={admin}"  # printed once it serves
        state = json.loads((workdir / "state.json").read_text())
        assert (state["kube"], state["rayMode"], state["pid"]) == ("real", "simulated", process.pid)
        assert node_ready(admin)
        manifest = raycluster_manifest("sim", workers=0)
        with_quick_readiness(manifest["spec"])
        created = kubectl(admin, "apply", "-f", "-", input_text=json.dumps(manifest))
        assert created.returncode == 0, created.stderr

        def head_of_simulated_ray_ready() -> bool:
            cluster = json.loads(kubectl(admin, "get", "raycluster", "sim", "-o", "json").stdout)
            return bool((cluster.get("status") or {}).get("state") == "ready")

        # KubeRay's operator made the head Pod; the node agent runs simulated Ray in it, whose dashboard
        # answers as Ray's does.
        eventually(head_of_simulated_ray_ready, "the RayCluster of simulated Ray ready")
        version = kubectl(
            admin,
            "get",
            "--raw",
            "/api/v1/namespaces/default/services/sim-head-svc:dashboard/proxy/api/version",
        )
        assert json.loads(version.stdout)["ray_version"], version.stderr
        again = sandbox_cli("up", "--ray", "simulated", "--dir", str(workdir))
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stderr
        processes = descendants(process.pid)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=180) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not [pid for pid in processes if alive(pid)]
    assert not (workdir / "state.json").exists()
    assert sandbox_cli("down", "--dir", str(workdir)).stderr.startswith("no sandbox running")
