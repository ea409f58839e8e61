"""The processes of simulated Ray's `ray start` (sandbox/images/simulated_ray.py): a head (the simulated
dashboard, a GCS port that accepts connections, the dashboard agent's health check) or a worker (the agent's
health check, and a Serve proxy that hands every request to the head's). Kept apart from the `ray` program's
dispatch so that its other commands (a submitter's `ray job ...`, KubeRay's `ray health-check`) start without
importing the dashboard."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Mapping

from aiohttp import web

from sandbox.images.ray_start_args import gcs_address
from sandbox.proxy import TcpForwarder
from sandbox.ray.listening import serve_app
from sandbox.ray.simulated import SimulatedDashboard
from sandbox.ray.simulated_timings import TIMINGS_ENV, SimulationTimings

__all__ = ["run_head", "run_worker", "until_stopped"]

EVERY_ADDRESS = "0.0.0.0"
SERVE_PORT = 8000


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
