"""The `ray` program of simulated Ray (sandbox/images/simulated_ray.py), in parts: how it reads KubeRay's
`ray start` line, where a worker finds its head, and the GCS health check. The whole program runs
under KubeRay's operator in tests/integration (the `kube_stack` fixture's real stack)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from sandbox.images.ray_start_args import gcs_address, start_params
from sandbox.images.simulated_ray import health_check

# KubeRay 1.5's head and worker commands, as the node agent's shell passes them on.
HEAD = (
    "start --head --dashboard-host=0.0.0.0 --metrics-export-port=8080 --block "
    "--dashboard-agent-listen-port=52365 --num-cpus=1 --memory=1073741824"
)
WORKER = (
    "start --address=rc-head-svc.ns.svc.cluster.local:6379 --metrics-export-port=8080 --block --num-cpus 1"
)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            HEAD.split()[1:],
            {
                "head": "",
                "dashboard-host": "0.0.0.0",
                "metrics-export-port": "8080",
                "block": "",
                "dashboard-agent-listen-port": "52365",
                "num-cpus": "1",
                "memory": "1073741824",
            },
        ),
        (
            WORKER.split()[1:],
            {
                "address": "rc-head-svc.ns.svc.cluster.local:6379",
                "metrics-export-port": "8080",
                "block": "",
                "num-cpus": "1",
            },
        ),
        (["--dashboard-port", "9265", "--head"], {"dashboard-port": "9265", "head": ""}),
        (["stray", "--block"], {"block": ""}),
        ([], {}),
    ],
)
def test_start_params_read_both_spellings_and_flags(argv: list[str], expected: dict[str, str]) -> None:
    assert start_params(argv) == expected


def test_the_health_check_says_whether_the_gcs_port_accepts_a_connection() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert health_check({"address": f"127.0.0.1:{port}"}) == 0
    assert health_check({"address": f"127.0.0.1:{port}"}) == 1
    assert health_check({"address": "no-port"}) == 1


def test_the_gcs_address_defaults_to_rays_port() -> None:
    assert gcs_address({"address": "rc-head-svc.ns.svc.cluster.local:6380"}) == (
        "rc-head-svc.ns.svc.cluster.local",
        6380,
    )
    assert gcs_address({"address": "10.200.0.6:"}) == ("10.200.0.6", 6379)


def test_other_commands_are_the_real_rays() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox.images.simulated_ray", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "2.60.0" in done.stdout
