"""The `ray` program of a Ray image, simulated: what the node agent runs for a Ray container when it runs pods
of simulated Ray (`python -m sandbox.nodeagent --ray simulated`), so that a RayCluster of KubeRay's costs a
few small processes instead of real Ray nodes, on the real API server and the real KubeRay operator.

    ray start --head ... [--block]   the head: the simulated dashboard (Jobs and Serve REST API, the Serve
                                     proxy, metrics; sandbox.ray.simulated) on Ray's ports, a GCS port that
                                     accepts connections, and the dashboard agent's health check
    ray start --address=HOST:PORT    a worker: the agent's health check, and a Serve proxy that hands every
                                     request to the head's (a real node's proxy routes to replicas anywhere)
    ray health-check --address A     whether the GCS port at A accepts a connection (KubeRay's init container)
    ray kuberay-autoscaler ...       waits until stopped: simulated Ray has no autoscaler
    anything else                    the real `ray` (`ray job submit` of a submitter against the dashboard)

Ports as in a Ray image: the dashboard `--dashboard-port` (8265), the GCS `--port` (6379), the agent
`--dashboard-agent-listen-port` (52365), metrics `--metrics-export-port` (8080), Serve 8000. Every port
listens on every address of the pod's network (KubeRay's probes ask localhost). `RAYPILOT_SIMULATED_RAY=fast`
in the environment picks the sandbox's fast timings. `ray start`'s processes are in simulated_ray_node.py.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from sandbox.images.ray_start_args import gcs_address, start_params

REAL_RAY = Path(sys.executable).parent / "ray"
HEALTH_CHECK_TIMEOUT_S = 2.0


def health_check(params: Mapping[str, str]) -> int:
    try:
        address = gcs_address(params)
        with socket.create_connection(address, timeout=HEALTH_CHECK_TIMEOUT_S):
            return 0
    except (OSError, ValueError) as error:
        print(f"the GCS at {params.get('address', '')} is not reachable: {error}", file=sys.stderr)
        return 1


def main(argv: Sequence[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("", [])
    if command in ("start", "kuberay-autoscaler"):
        # Imported here: the other commands (each call of a submitter's `ray job`, KubeRay's health-check
        # init container) would pay over half a second of CPU each for the dashboard they never start.
        from sandbox.images.simulated_ray_node import run_head, run_worker, until_stopped
    if command == "start":
        params = start_params(rest)
        if "head" in params:
            asyncio.run(run_head(params, dict(os.environ)))
        else:
            asyncio.run(run_worker(params))
        return 0
    if command == "health-check":
        return health_check(start_params(rest))
    if command == "kuberay-autoscaler":
        asyncio.run(until_stopped())
        return 0
    os.execv(REAL_RAY, [str(REAL_RAY), *argv])
    return 1  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
