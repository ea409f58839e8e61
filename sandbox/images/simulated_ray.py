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
in the environment picks the sandbox's fast timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from aiohttp import web

from sandbox.proxy import TcpForwarder
from sandbox.ray.listening import serve_app
from sandbox.ray.simulated import SimulatedDashboard
from sandbox.ray.simulated_timings import TIMINGS_ENV, SimulationTimings

REAL_RAY = Path(sys.executable).parent / "ray"
EVERY_ADDRESS = "0.0.0.0"
SERVE_PORT = 8000
HEALTH_CHECK_TIMEOUT_S = 2.0


def start_params(argv: Sequence[str]) -> dict[str, str]:
    """`ray start`'s options by name without dashes: `--key=value` and `--key value` give the value, a flag
    alone gives ""."""
    params: dict[str, str] = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("--"):
            continue
        name, equals, value = token[2:].partition("=")
        if not equals and index < len(argv) and not argv[index].startswith("--"):
            value = argv[index]
            index += 1
        params[name] = value
    return params


def timings(env: Mapping[str, str]) -> SimulationTimings:
    return SimulationTimings.fast() if env.get(TIMINGS_ENV) == "fast" else SimulationTimings()


def pod_address() -> str:
    """This network's own address: the source of a route out (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


async def until_stopped() -> None:
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    await stopped.wait()


def agent_app() -> web.Application:
    """The dashboard agent's health check, as KubeRay's probes read it."""

    async def healthy(request: web.Request) -> web.Response:
        return web.Response(text="success")

    app = web.Application()
    app.router.add_get("/api/local_raylet_healthz", healthy)
    return app


async def serve_agent(params: Mapping[str, str]) -> web.AppRunner:
    """The agent's health check on its port (`--dashboard-agent-listen-port`, 52365 by default)."""
    port = int(params.get("dashboard-agent-listen-port") or 52365)
    return await serve_app(agent_app(), EVERY_ADDRESS, port)


async def accept_and_hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The GCS port: a connection is accepted and held until the peer goes (no GCS protocol is spoken)."""
    with contextlib.suppress(ConnectionError):
        await reader.read()
    writer.close()


async def run_head(params: Mapping[str, str], env: Mapping[str, str]) -> None:
    dashboard = SimulatedDashboard(
        env.get("HOSTNAME", "head"),
        env,
        params,
        host=pod_address(),
        timings=timings(env),
        listen=EVERY_ADDRESS,
        ports={
            "dashboard": int(params.get("dashboard-port") or 8265),
            "serve": SERVE_PORT,
            "metrics": int(params.get("metrics-export-port") or 8080),
        },
    )
    await dashboard.start()
    gcs = await asyncio.start_server(accept_and_hold, EVERY_ADDRESS, int(params.get("port") or 6379))
    agent = await serve_agent(params)
    print(f"simulated Ray head: dashboard {dashboard.dashboard_url}", flush=True)
    try:
        await until_stopped()
    finally:
        await agent.cleanup()
        gcs.close()
        await dashboard.stop()


def gcs_address(params: Mapping[str, str]) -> tuple[str, int]:
    """The head's host and GCS port of `--address HOST:PORT`."""
    host, _, port = params.get("address", "").rpartition(":")
    return host, int(port or 6379)


async def run_worker(params: Mapping[str, str]) -> None:
    head, _ = gcs_address(params)
    agent = await serve_agent(params)
    # A worker's Serve proxy: every connection carried to the head's proxy, which routes to the replicas.
    serve = TcpForwarder(EVERY_ADDRESS, SERVE_PORT, lambda: (head, SERVE_PORT))
    await serve.start()
    print(f"simulated Ray worker of {head}", flush=True)
    try:
        await until_stopped()
    finally:
        await serve.stop()
        await agent.cleanup()


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
