"""`raypilot controller`: leader election, then the loop (raypilot.controller.loop) until SIGTERM/SIGINT or
until the Lease is lost (then it exits 1 so that it never acts beside a new leader; its Deployment restarts
it as a follower)."""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import signal
import socket
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kubernetes import client as k8s

from activities.kubernetes.client import load_kube_configuration
from models.features import FEATURE_GATES_ENV, parse_feature_gates
from raypilot.controller.kube import ControllerKube
from raypilot.controller.lease import LeaderLease
from raypilot.controller.loop import Controller
from raypilot.controller.temporal_io import ControllerTemporal
from raypilot.runs.errors import EXIT_FAILURE, EXIT_OK
from raypilot.settings import TemporalSettings, connect

log = logging.getLogger("raypilot.controller")


@dataclass(frozen=True)
class ControllerOptions:
    lease_namespace: str = "default"
    identity: str = ""
    lease_seconds: int = 15
    renew_seconds: float = 5.0
    status_interval: float = 2.0


def default_identity() -> str:
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


async def run_controller(options: ControllerOptions, env: Mapping[str, str], stop: asyncio.Event) -> int:
    settings = TemporalSettings.from_env(env)
    gates = parse_feature_gates(env.get(FEATURE_GATES_ENV, ""))
    api_client = k8s.ApiClient(load_kube_configuration(env))
    identity = options.identity or default_identity()
    lease = LeaderLease(api_client, options.lease_namespace, identity, options.lease_seconds)
    try:
        waiting = False
        while not await asyncio.to_thread(lease.try_acquire_or_renew):
            if not waiting:
                log.info("%s: another controller leads; waiting", identity)
                waiting = True
            if await _stopped_within(stop, options.renew_seconds):
                return EXIT_OK
        log.info("%s: leading", identity)
        temporal = ControllerTemporal(await connect(settings), settings.task_queue)
        log.info("%s: connected to Temporal at %s", identity, settings.address)
        controller = Controller(ControllerKube(api_client), temporal, gates, options.status_interval)
        lost = asyncio.Event()
        renewing = asyncio.create_task(_keep_lease(lease, options.renew_seconds, lost))
        either = asyncio.Event()
        forwards = [asyncio.create_task(_forward(event, either)) for event in (stop, lost)]
        await controller.run(either)
        for task in (renewing, *forwards):
            task.cancel()
        if lost.is_set():
            log.error("%s: lost the Lease; exiting so as never to act beside another leader", identity)
            return EXIT_FAILURE
        await asyncio.to_thread(lease.release)
        return EXIT_OK
    finally:
        api_client.close()


async def _forward(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True


async def _keep_lease(lease: LeaderLease, renew_seconds: float, lost: asyncio.Event) -> None:
    while True:
        await asyncio.sleep(renew_seconds)
        try:
            held = await asyncio.to_thread(lease.try_acquire_or_renew)
        except Exception as error:  # the API unreachable for longer than the Lease: another may lead now
            log.warning("renewing the Lease: %s", error)
            held = False
        if not held:
            lost.set()
            return


def _print_tasks() -> None:
    for task in asyncio.all_tasks():
        task.print_stack(file=sys.stderr)


def controller_command(options: ControllerOptions) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 PID`: where every thread is

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        loop.add_signal_handler(signal.SIGUSR2, _print_tasks)  # `kill -USR2 PID`: where every task waits
        return await run_controller(options, os.environ, stop)

    return asyncio.run(main())
