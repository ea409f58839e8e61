"""Drained deletion under load (opt-in: `python -m bench.rayservice_drain [--ray simulated|real]`), on a real
stack of its own (bench/realkube_stack.py; root, `make kube`) whose pods run simulated or real Ray.

For blue-green (NewCluster, clients on `<name>-serve-svc`) and incremental (clients on the Gateway), with
`raypilot.io/max-drain-seconds: "0"` (KubeRay's deletion at the delay) and with raypilot's default drain (no
annotation; `--max-drain N` sets N instead): v1 runs, keep-alive clients send requests without stopping (the
reference a real client is), v2 is applied and, while the old cluster still takes traffic, three requests
longer than the deletion delay are sent on connections of their own. Measured: requests and failed requests
of the keep-alive clients, long requests cut off, and the drain time (from the switch to the old cluster's
deletion). Prints one Markdown table; `--record` appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from temporalio.testing import WorkflowEnvironment

from bench.realkube_stack import running_real_stack
from bench.upgrades import Incremental, incremental_rayservice, service_url
from raypilot.converter import raypilot_data_converter
from raypilot.load import SteadyLoad
from raypilot.testing.binaries import temporal_cli
from sandbox.realkube.node import RayKind
from sandbox.testing import wait_until
from tests.integration.drain_checks import pending_serves
from tests.integration.rayservice_helpers import active_cluster, is_running, pending_cluster, rayservice
from tests.integration.stack import Stack
from workflows.decisions.rayservice.drain import MAX_DRAIN_ANNOTATION
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
STRATEGY_NAMES = {False: "blue-green", True: "incremental"}
DELAY_S = 5  # rayClusterDeletionDelaySeconds of both manifests
LONG_REQUEST_S = DELAY_S + 10
LONG_REQUESTS = 6
# An incremental upgrade's long requests are sent when the old cluster has 50 % of the traffic left (one step,
# 5 s, before its promotion), so about half of them reach it; they last long enough to run past the delay.
INCREMENTAL_LONG_REQUEST_S = 25


@dataclass(frozen=True)
class Outcome:
    strategy: str
    setting: str  # the annotation's value, as the table shows it
    requests: int
    failed: int
    long_cut: int
    drain_s: float


def manifest(
    namespace: str, name: str, version: str, incremental: bool, max_drain_s: int | None
) -> dict[str, Any]:
    body = (
        incremental_rayservice(namespace, name, version, Incremental(50, 5, 50))
        if incremental
        else rayservice(namespace, name, version)
    )
    body["spec"]["rayClusterDeletionDelaySeconds"] = DELAY_S
    if max_drain_s is not None:
        body["metadata"]["annotations"] = {MAX_DRAIN_ANNOTATION: str(max_drain_s)}
    return body


def old_share_between(status: dict[str, Any]) -> bool:
    """The old (active) cluster still takes some traffic, but no longer all of it."""
    share = (status.get("activeServiceStatus") or {}).get("trafficRoutedPercent")
    return share is not None and 0 < share < 100


async def wait_for(stack: Stack, handle: Any, holds: Any, within: float) -> dict[str, Any]:
    status: dict[str, Any] = await stack.wait_status(handle, holds, within=within, what="status")
    return status


async def one_run(stack: Stack, incremental: bool, max_drain_s: int | None, within: float) -> Outcome:
    namespace = stack.namespace()
    name = "inc" if incremental else "bg"
    handle = await stack.start(manifest(namespace, name, "v1", incremental, max_drain_s))
    old = active_cluster(await wait_for(stack, handle, is_running, within))
    url = await service_url(stack, namespace, name, incremental)
    async with (
        SteadyLoad(url, concurrency=4, keep_alive=True, pause_s=0.02, timeout_s=30) as load,
        httpx.AsyncClient(timeout=INCREMENTAL_LONG_REQUEST_S + 30, trust_env=False) as fresh,
    ):
        await load.wait_for_requests(200)
        await handle.execute_update("apply", manifest(namespace, name, "v2", incremental, max_drain_s))
        if incremental:
            await wait_for(stack, handle, old_share_between, within)
        else:  # the switch held until the new cluster serves, so that the long requests come right before it
            await wait_for(stack, handle, pending_cluster, within)
            await handle.execute_update("pause")
            await wait_for(stack, handle, pending_serves, within)
        long = {"work_s": INCREMENTAL_LONG_REQUEST_S if incremental else LONG_REQUEST_S}
        long_requests = [
            asyncio.create_task(fresh.get(url, params=long, headers={"Connection": "close"}))
            for _ in range(LONG_REQUESTS)
        ]
        if not incremental:
            await asyncio.sleep(0.5)
            await handle.execute_update("resume")
        await wait_for(
            stack, handle, lambda s: active_cluster(s) not in ("", old) and not pending_cluster(s), within
        )
        switched_at = time.monotonic()
        await wait_until(
            lambda: not stack.exists("rayclusters", namespace, old),
            within=within,
            interval=0.2,
            what="old gone",
        )
        drain_s = time.monotonic() - switched_at
        answers = await asyncio.gather(*long_requests, return_exceptions=True)
        await load.wait_for_requests(len(load.samples) + 300)
    cut = sum(1 for a in answers if not (isinstance(a, httpx.Response) and a.status_code == 200))
    failed_at = [f"{sample.at - switched_at:+.1f} s {sample.detail}" for sample in load.failures[:5]]
    print(f"failures (time from the switch): {failed_at}; long requests: {answers}", flush=True)
    await handle.execute_update("delete")
    strategy = "incremental (Gateway)" if incremental else "blue-green (Service)"
    return Outcome(
        strategy, annotation_shown(max_drain_s), len(load.samples), len(load.failures), cut, drain_s
    )


def annotation_shown(max_drain_s: int | None) -> str:
    if max_drain_s is None:
        return "(none: drained, 60 s at most)"
    return "0 (KubeRay)" if max_drain_s == 0 else str(max_drain_s)


async def measure(ray: RayKind, max_drain_s: int | None, record: bool, only: str | None = None) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(),
        data_converter=raypilot_data_converter,
        search_attributes=ALL_SEARCH_ATTRIBUTES,
        dev_server_log_level="error",
    )
    within = 480.0 if ray == "real" else 120.0
    outcomes: list[Outcome] = []
    try:
        with tempfile.TemporaryDirectory(prefix="raypilot-drain-") as workdir:
            async with (
                running_real_stack(Path(workdir), ray) as real,
                real.stack_with_worker(env.client) as stack,
            ):
                for incremental in [i for i in (False, True) if only in (None, STRATEGY_NAMES[i])]:
                    for drain in (0, max_drain_s):
                        outcomes.append(await one_run(stack, incremental, drain, within))
                        print(outcomes[-1], flush=True)
    finally:
        await env.shutdown()
    lines = [
        f"\n### Drained deletion ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, real stack, {ray} Ray, "
        f"{os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}; deletion delay {DELAY_S} s, {LONG_REQUESTS} requests of "
        f"{LONG_REQUEST_S} s (incremental: {INCREMENTAL_LONG_REQUEST_S} s), 4 keep-alive clients)\n",
        "| upgrade | raypilot.io/max-drain-seconds | keep-alive requests | failed | long requests cut off "
        "| switch -> old cluster deleted |",
        "|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.strategy} | {o.setting} | {o.requests} | {o.failed} | {o.long_cut} of {LONG_REQUESTS} "
            f"| {o.drain_s:.1f} s |"
        )
    table = "\n".join(lines) + "\n"
    print(table)
    if record:
        with RESULTS.open("a") as results:
            results.write(table)


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ray", choices=["simulated", "real"], default="simulated")
    parser.add_argument("--max-drain", type=int, default=None, help="N instead of the default drain")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--only", choices=sorted(STRATEGY_NAMES.values()), help="one upgrade strategy")
    args = parser.parse_args()
    asyncio.run(measure(args.ray, args.max_drain, args.record, args.only))


if __name__ == "__main__":
    main_cli()
