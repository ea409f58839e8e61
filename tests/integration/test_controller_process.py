"""`raypilot controller` as processes: two replicas, one leader (the Lease); the leader killed (SIGKILL)
mid-lifecycle, the other takes over and writes the RayJob's final status, with no second run or cluster;
SIGTERM ends a leader cleanly and gives the Lease up. (A changed spec applied by a controller started again:
test_controller.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from raypilot.controller.lease import LEASE_NAME
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.stack import Stack
from tests.kubectl import KUBECTL, kubectl
from tests.kubes import RealKube

# About 25 s (two controller processes start, a Lease expires): opt-in, so `make test` stays within its
# budget; the same behaviours run in-process in test_controller.py.
pytestmark = [
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
    pytest.mark.skipif(
        os.environ.get("RAYPILOT_CONTROLLER_PROCESSES") != "1",
        reason="opt-in: RAYPILOT_CONTROLLER_PROCESSES=1",
    ),
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def controllers(kube_stack: Stack, tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Start `raypilot controller --identity NAME` processes with started[NAME] = ...; all are ended."""
    started: dict[str, subprocess.Popen[bytes]] = {}
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
            process.wait(10)


def spawn(
    stack: Stack, kubeconfig: Path, lease_namespace: str, identity: str, log: Path
) -> subprocess.Popen[bytes]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "KUBECONFIG": str(kubeconfig),
        "TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": stack.client.namespace,
        "RAYPILOT_TASK_QUEUE": stack.task_queue,
    }
    command = [sys.executable, "-m", "raypilot.cli.main", "controller", "--identity", identity]
    command += ["--lease-namespace", lease_namespace, "--lease-seconds", "5", "--renew-seconds", "0.5"]
    command += ["--status-interval", "0.3"]
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)


def holder(stack: Stack, namespace: str) -> str:
    try:
        lease = k8s.CoordinationV1Api(stack.api_client).read_namespaced_lease(LEASE_NAME, namespace)
    except k8s.ApiException:
        return ""
    return str(lease.spec.holder_identity or "")


def phase(env: dict[str, str], namespace: str, name: str) -> str:
    out = kubectl(env, "get", "rayjobs.raypilot.io", name, "-n", namespace, "-o", "json", check=False)
    try:
        return str((json.loads(out).get("status") or {}).get("jobDeploymentStatus") or "")
    except json.JSONDecodeError:
        return ""


async def test_the_leader_killed_mid_lifecycle_the_other_finishes_with_no_second_run(
    kube_stack: Stack,
    real_kube_of_simulated_ray: RealKube,
    controllers: dict[str, subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    stack, kube = kube_stack, real_kube_of_simulated_ray
    env = {"KUBECONFIG": str(kube.admin), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    namespace = stack.namespace()
    # The Lease in the test's namespace, with deploy/'s leader-election Role bound there for the controller.
    role = ROOT / "deploy" / "controller" / "role-leader-election.yaml"
    kubectl(env, "apply", "--server-side", "-n", namespace, "-f", str(role))
    controller = kube.installed.controller
    controllers["a"] = spawn(stack, controller, namespace, "a", tmp_path / "a.log")
    await wait_until(lambda: holder(stack, namespace) == "a", within=30, interval=0.1, what="a leads")
    controllers["b"] = spawn(stack, controller, namespace, "b", tmp_path / "b.log")

    manifest = example("rayjob-httpmode", namespace, rename="job", entrypoint="sleep 4")
    manifest["apiVersion"] = "raypilot.io/v1"
    await asyncio.to_thread(kubectl, env, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    await wait_until(
        lambda: phase(env, namespace, "job") == "Running", within=60, interval=0.2, what="Running"
    )
    assert holder(stack, namespace) == "a"  # b never took over while a renewed
    controllers["a"].send_signal(signal.SIGKILL)
    controllers["a"].wait(10)

    await wait_until(lambda: holder(stack, namespace) == "b", within=30, interval=0.1, what="b takes over")
    await wait_until(
        lambda: phase(env, namespace, "job") == "Complete", within=60, interval=0.2, what="Complete"
    )
    runs = [run async for run in stack.client.list_workflows(f"WorkflowId = 'rayjob/{namespace}/job'")]
    assert len(runs) == 1
    clusters = json.loads(kubectl(env, "get", "rayclusters.ray.io", "-n", namespace, "-o", "json"))["items"]
    assert len(clusters) == 1

    controllers["b"].send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(controllers["b"].wait, 20) == 0
    assert holder(stack, namespace) == ""  # given up on a clean exit
    log = (tmp_path / "b.log").read_text()
    assert "another controller leads; waiting" in log
    assert "b: leading" in log
