"""A head pod's extra containers run as local processes (SidecarMode's submitter), reported as a kubelet
would."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import sandbox.store
from sandbox.cluster import Sandbox
from sandbox.controllers.pod_processes import rewrite_loopback
from sandbox.controllers.raycluster_head import process_alive
from sandbox.controllers.raycluster_sidecars import pod_phase_after, restarts_after
from sandbox.ray.simulated_timings import SimulationTimings
from sandbox.testing import private_pools, raycluster_manifest, running_sandbox, wait_until

# What KubeRay's SidecarMode submitter does first: wait for the GCS through the pod's own loopback address.
HEALTH_CHECK = (
    "import urllib.request, sys; "
    "r = urllib.request.urlopen('http://localhost:8265/api/gcs_healthz', timeout=5); "
    "sys.exit(0 if b'success' in r.read() else 1)"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:8265", "http://127.0.9.4:8265"),
        ("http://localhost:8265/api/gcs_healthz", "http://127.0.9.4:8265/api/gcs_healthz"),
        ("--address=localhost", "--address=127.0.9.4"),
        ("127.0.0.10:80", "127.0.0.10:80"),
        ("my-localhost.example:1", "my-localhost.example:1"),
        ("localhost.localdomain", "localhost.localdomain"),
    ],
)
def test_loopback_means_the_pod_itself(text: str, expected: str) -> None:
    assert rewrite_loopback(text, "127.0.9.4") == expected


@pytest.mark.parametrize(
    ("container_policy", "pod_policy", "exit_code", "restarts"),
    [
        (None, "Never", 1, False),
        (None, None, 0, True),
        ("OnFailure", "Never", 1, True),
        ("OnFailure", "Never", 0, False),
        (None, "OnFailure", 0, False),
    ],
)
def test_restart_follows_the_container_then_the_pod_policy(
    container_policy: str | None, pod_policy: str | None, exit_code: int, restarts: bool
) -> None:
    container = (
        {"name": "c"} if container_policy is None else {"name": "c", "restartPolicy": container_policy}
    )
    assert restarts_after(container, pod_policy, exit_code) is restarts


def _state(kind: str, exit_code: int = 0) -> dict[str, Any]:
    return {"state": {"terminated": {"exitCode": exit_code}} if kind == "terminated" else {"running": {}}}


def test_pod_phase_ends_only_when_every_container_ended() -> None:
    assert pod_phase_after([_state("running"), _state("terminated", 3)], "Running") == "Running"
    assert pod_phase_after([_state("terminated"), _state("terminated")], "Running") == "Succeeded"
    assert pod_phase_after([_state("terminated", 1), _state("terminated")], "Running") == "Failed"


@pytest.fixture
async def simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Sandbox]:
    monkeypatch.setattr(sandbox.store, "standard_pools", private_pools)
    async with running_sandbox(tmp_path, simulated_options={"timings": SimulationTimings.fast()}) as box:
        yield box


def _with_sidecars(name: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
    manifest = raycluster_manifest(name, workers=0)
    spec = manifest["spec"]["headGroupSpec"]["template"]["spec"]
    spec["containers"] += containers
    spec["restartPolicy"] = "Never"
    return manifest


def _head_pod(box: Sandbox, cluster: str) -> dict[str, Any] | None:
    pods = box.store.list(
        "v1", "Pod", "default", label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head"
    )
    return pods[0] if pods else None


def _container_state(pod: dict[str, Any] | None, name: str) -> dict[str, Any]:
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        if status["name"] == name:
            return dict(status)
    return {}


async def test_sidecars_run_against_the_heads_dashboard_and_report_their_exit(simulated: Sandbox) -> None:
    box = simulated
    box.store.create(
        "ray.io/v1",
        "RayCluster",
        _with_sidecars(
            "sidecars",
            [
                {"name": "health", "command": ["python", "-c", HEALTH_CHECK]},
                {
                    "name": "failing",
                    "command": ["/bin/sh", "-c", "echo $(GREETING) >&2; exit 3"],
                    "env": [{"name": "GREETING", "value": "bye"}],
                },
                {"name": "log-shipper", "image": "fluent-bit"},
            ],
        ),
    )

    def ended(name: str) -> dict[str, Any] | None:
        terminated = (_container_state(_head_pod(box, "sidecars"), name).get("state") or {}).get("terminated")
        return dict(terminated) if terminated else None

    assert (await wait_until(lambda: ended("health"), within=30, what="health sidecar exit"))["exitCode"] == 0
    failing = await wait_until(lambda: ended("failing"), within=30, what="failing sidecar exit")
    assert (failing["exitCode"], failing["reason"]) == (3, "Error")
    pod = _head_pod(box, "sidecars")
    assert pod is not None
    assert pod["status"]["phase"] == "Running", "the Ray container still runs"
    assert "running" in _container_state(pod, "ray-head")["state"]
    assert "running" in _container_state(pod, "log-shipper")["state"], "image-only sidecars are taken to run"
    assert _container_state(pod, "failing")["restartCount"] == 0, "restartPolicy Never: not restarted"
    ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False", "a terminated container is not ready, as on a kubelet"
    log_path = box.workdir / "pods" / "default" / pod["metadata"]["name"] / "failing.log"
    assert log_path.read_text().strip() == "bye"
    assert box.head_sidecars.pids == []
    # As KubeRay's, the head Service publishes the head while it is not Ready: the dashboard of a SidecarMode
    # head whose submitter exited still answers through it (a RayJob reads its job's end there).
    service = box.store.get("v1", "Service", "default", "sidecars-head-svc")
    assert service["spec"]["publishNotReadyAddresses"] is True
    url = f"http://{service['spec']['clusterIP']}:8265/api/gcs_healthz"

    def healthz() -> bytes:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return bytes(answer.read())

    assert b"success" in await asyncio.to_thread(healthz)


async def test_a_running_sidecar_is_stopped_by_pid_when_its_pod_goes(simulated: Sandbox) -> None:
    box = simulated
    box.store.create(
        "ray.io/v1",
        "RayCluster",
        _with_sidecars("sleepy", [{"name": "sleeper", "command": ["sleep", "600"]}]),
    )

    def running_and_recorded() -> list[int] | None:
        # The pod's status and the recorded processes are read together: once, in a full run under load, the
        # status said running while no process was recorded (not reproduced since; the controller records a
        # process before it reports it running, so the first process had ended or its pod had gone).
        state = _container_state(_head_pod(box, "sleepy"), "sleeper").get("state") or {}
        pids = list(box.head_sidecars.pids)
        return pids if "running" in state and pids else None

    pids = await wait_until(running_and_recorded, within=30, what="sleeper running, its process recorded")
    assert len(pids) == 1
    assert pids[0] in box.pids, "recorded with the sandbox's processes (sessions.json)"
    box.store.delete("ray.io/v1", "RayCluster", "default", "sleepy")
    await wait_until(lambda: box.head_sidecars.pids == [], within=10, what="sleeper stopped")
    assert not process_alive(pids[0])
