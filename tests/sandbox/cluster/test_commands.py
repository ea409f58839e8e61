"""`raypilot sandbox up|down` end to end in simulated mode, as separate processes (python -m sandbox.main)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import kubernetes
import pytest

from sandbox.main import default_kube_mode
from sandbox.testing import poll_until, raycluster_manifest, ready_raycluster


def sandbox_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(
    "args",
    [
        ["up", "--ray", "imaginary"],
        ["up", "--kube", "imaginary"],
        ["up", "--kube", "real", "--ray", "simulated"],
        ["sideways"],
        ["up", "--unknown-flag"],
        [],
        ["down", "extra"],
    ],
)
def test_bad_input_exits_2(args: list[str], tmp_path: Path) -> None:
    result = sandbox_cli(*args, "--dir", str(tmp_path)) if args[:1] == ["up"] else sandbox_cli(*args)
    assert result.returncode == 2, result
    assert result.stderr.strip()


def test_down_with_nothing_running_succeeds(tmp_path: Path) -> None:
    result = sandbox_cli("down", "--dir", str(tmp_path / "never-used"))
    assert result.returncode == 0, result.stderr


def test_up_twice_then_down(tmp_path: Path) -> None:
    workdir = tmp_path / "sb"
    first = sandbox_cli("up", "--ray", "simulated", "--dir", str(workdir))
    assert first.returncode == 0, first.stderr
    kubeconfig_line = f"KUBECONFIG={workdir / 'kubeconfig'}"
    assert kubeconfig_line in first.stdout.splitlines()
    state = json.loads((workdir / "state.json").read_text())
    pid = state["pid"]
    try:
        assert alive(pid)
        second = sandbox_cli("up", "--ray", "simulated", "--dir", str(workdir))
        assert second.returncode == 0, second.stderr
        assert kubeconfig_line in second.stdout.splitlines()
        assert "already running" in second.stderr
        assert json.loads((workdir / "state.json").read_text())["pid"] == pid

        client = kubernetes.config.new_client_from_config(config_file=str(workdir / "kubeconfig"))
        custom = kubernetes.client.CustomObjectsApi(client)
        custom.create_namespaced_custom_object(
            "ray.io", "v1", "default", "rayclusters", raycluster_manifest("cli")
        )
        cluster = poll_until(
            lambda: ready_raycluster(custom, "default", "cli"), within=30, what="RayCluster ready"
        )
        pod_ip = cluster["status"]["head"]["podIP"]
        with urllib.request.urlopen(f"http://{pod_ip}:8265/api/version", timeout=5) as response:
            assert response.status == 200
        kubectl = Path(sys.executable).parent / "kubectl"
        if kubectl.exists():
            listed = subprocess.run(
                [str(kubectl), "get", "rayclusters", "-o", "name"],
                env={**os.environ, "KUBECONFIG": str(workdir / "kubeconfig")},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert listed.stdout.strip() == "raycluster.ray.io/cli", listed.stderr
    finally:
        down = sandbox_cli("down", "--dir", str(workdir))
    assert down.returncode == 0, down.stderr
    assert not alive(pid)
    assert not (workdir / "state.json").exists()
    again = sandbox_cli("down", "--dir", str(workdir))
    assert again.returncode == 0, again.stderr


def test_foreground_stays_until_sigint_and_cleans_up(tmp_path: Path) -> None:
    workdir = tmp_path / "fg"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sandbox.main",
            "up",
            "--ray",
            "simulated",
            "--dir",
            str(workdir),
            "--foreground",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line == f"KUBECONFIG={workdir / 'kubeconfig'}"
        assert process.poll() is None
        client = kubernetes.config.new_client_from_config(config_file=str(workdir / "kubeconfig"))
        names = [ns.metadata.name for ns in kubernetes.client.CoreV1Api(client).list_namespace().items]
        assert "default" in names
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert not (workdir / "state.json").exists()
    assert sandbox_cli("down", "--dir", str(workdir)).stderr.startswith("no sandbox running")


def test_without_kube_an_unbuilt_real_stack_means_the_simulated_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`up` never starts a cold build unasked: with no built cache it serves the simulated Kubernetes and
    says why (and `--ray simulated` always means the simulated one)."""
    monkeypatch.delenv("RAYPILOT_KUBE_DIR", raising=False)
    monkeypatch.setenv("RAYPILOT_KUBE_CACHE", str(tmp_path / "empty-cache"))
    assert default_kube_mode(None) == "simulated"
    reason = capsys.readouterr().err
    assert reason.startswith("the simulated Kubernetes: ")
    assert reason.strip() != "the simulated Kubernetes:"  # the reason: not built yet, no root, no Go...
    assert default_kube_mode("simulated") == "simulated"
    assert capsys.readouterr().err == ""
    assert not (tmp_path / "empty-cache").exists() or not any((tmp_path / "empty-cache").rglob("bin"))
