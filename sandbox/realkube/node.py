"""raypilot's node agent (sandbox/nodeagent) as a process beside a control plane: started with the plane's
admin kubeconfig, ready once its Node reports Ready, stopped with SIGTERM (it stops its pods and removes their
network), SIGKILL after a grace period."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from sandbox.realkube.conditions import is_ready
from sandbox.realkube.controlplane import READY_WITHIN_S, ControlPlane, ControlPlaneError, stop_process

__all__ = ["NODE_NAME", "RayKind", "node_agent"]

RayKind = Literal["real", "simulated"]  # what the node's Ray containers run
NODE_NAME = "raypilot-node"
STOP_WITHIN_S = 60.0


def _node_ready(plane: ControlPlane) -> bool:
    found = plane.get_json(f"/api/v1/nodes/{NODE_NAME}")
    return found is not None and is_ready(found)


@contextlib.contextmanager
def node_agent(
    plane: ControlPlane, directory: Path, ray: RayKind = "real"
) -> Iterator[subprocess.Popen[bytes]]:
    """`ray`: "real", or "simulated" (with the sandbox's fast timings) for pods of simulated Ray."""
    directory.mkdir(parents=True, exist_ok=True)
    log_path = plane.log_path("node-agent")
    argv = [
        sys.executable,
        "-m",
        "sandbox.nodeagent",
        "--kubeconfig",
        str(plane.kubeconfig),
        "--dir",
        str(directory),
        "--kube-proxy",
        plane.binary("kube-proxy"),
        "--service-cidr",
        plane.service_cidr,
    ]
    if ray == "simulated":
        argv += ["--ray", "simulated", "--timings", "fast"]
    with log_path.open("ab") as log:
        process = subprocess.Popen([*argv, "--node", NODE_NAME], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + READY_WITHIN_S
        while not _node_ready(plane):
            if process.poll() is not None or time.monotonic() > deadline:
                raise ControlPlaneError(f"the node agent did not get ready:\n{plane.log_tail('node-agent')}")
            time.sleep(0.2)
        yield process
    finally:
        stop_process(process, STOP_WITHIN_S)
