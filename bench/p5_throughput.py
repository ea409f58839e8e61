"""P5: RayJob lifecycles per second through one worker on the dev server, beside bare Temporal.

Ours: K HTTPMode RayJobs started together on the real stack with simulated Ray (bench/realkube_stack.py;
fast timings), each a whole lifecycle: cluster created and ready (KubeRay's operator makes its head Pod, the
node agent runs it), Ray job submitted and watched to SUCCEEDED, cluster deleted
(shutdownAfterJobFinishes); rate = K / (last result - first start). The worker is `worker.py` in a process
of its own, as users run it (its workflow runner, task cap and observers; raypilot's ServiceAccount).

Reference, same server, same run: `BenchBareLifecycle` on `python -m bench.bare_worker` (the same runner
settings in a process of its own), a workflow that runs as many no-op activities and local activities,
one after the other, as a RayJob lifecycle had in its history.

Beside the rates, the CPU time each process spent per lifecycle (from /proc): the worker's, the stack's
(kube-apiserver's and the node agent's own; not etcd, kube-controller-manager, KubeRay's operator or the
pods' processes) and the dev server's. On one machine they share the cores, so the rate says how fast the
whole stand runs; the worker's CPU per lifecycle says what one worker costs whatever the rest of the stand
is.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowHandle

from bench.arithmetic import Figure, cpu_bound_ratio, cpu_for_ratio, cpu_ms_each, event_kind, ratio
from bench.jobs_support import (
    node_agent_pid,
    sample_process,
    server_pid,
    started_process,
    tree_cpu_seconds,
    worker_process,
)
from bench.progress import Progress
from bench.realkube_stack import shared_real_stack
from bench.suite import BenchContext
from tests.integration.rayjob_support import example

RATIO_TARGET = 0.7
LIFECYCLES = 100  # enough in flight that the rate is the stand's throughput, not one lifecycle's latency
SMOKE_LIFECYCLES = 2
STACK_PROCESSES = ("kube-apiserver", "node agent")


@dataclass(frozen=True)
class CpuPerLifecycle:
    """CPU milliseconds per lifecycle, by process (None: that process was not found)."""

    worker_ms: float
    stack_ms: float | None  # kube-apiserver's and the node agent's
    server_ms: float | None
    database_ms: float | None  # PostgreSQL's tree (Temporal on PostgreSQL); None on the dev server


@dataclass(frozen=True)
class Batch:
    rate: float  # lifecycles per second
    cpu: CpuPerLifecycle


class CpuMeter:
    """User+system CPU seconds of a few processes (and of the database's whole tree: a PostgreSQL backend
    per connection) from `start` to `per_item_ms`."""

    def __init__(self, pids: dict[str, int | None], database: int | None = None) -> None:
        self.pids = pids
        self.database = database
        self.before: dict[str, float] = {}

    def _read(self) -> dict[str, float]:
        found = {name: sample_process(pid).cpu_seconds for name, pid in self.pids.items() if pid is not None}
        if self.database is not None:
            found["database"] = tree_cpu_seconds(self.database)
        return found

    def start(self) -> None:
        self.before = self._read()

    def per_item_ms(self, items: int) -> dict[str, float]:
        after = self._read()
        return {name: cpu_ms_each(after[name] - self.before[name], items) for name in after}


async def timed_batch(
    label: str, starts: list[Awaitable[WorkflowHandle[Any, Any]]], meter: CpuMeter
) -> Batch:
    """Start every workflow at once and await every result; the rate and CPU of the whole batch."""
    meter.start()
    began = time.monotonic()
    with Progress(label, len(starts)) as bar:
        handles: list[WorkflowHandle[Any, Any]] = await asyncio.gather(*starts)

        async def finish(handle: WorkflowHandle[Any, Any]) -> None:
            await handle.result()
            bar.advance()

        await asyncio.gather(*(finish(handle) for handle in handles))
    took = time.monotonic() - began
    cpu = meter.per_item_ms(len(starts))
    stack = [cpu.get(name) for name in STACK_PROCESSES]
    stack_ms = None if None in stack else sum(ms for ms in stack if ms is not None)
    per_lifecycle = CpuPerLifecycle(cpu["worker"], stack_ms, cpu.get("server"), cpu.get("database"))
    return Batch(len(starts) / took, per_lifecycle)


def activity_counts(events: list[dict[str, Any]]) -> tuple[int, int]:
    """(ordinary activities, local activities) of a history."""
    kinds = [event_kind(event) for event in events]
    return kinds.count("activitytaskscheduled"), kinds.count("markerrecorded")


async def ours(context: BenchContext, count: int) -> tuple[Batch, tuple[int, int]]:
    workdir = context.scratch("p5-ours")
    real = await shared_real_stack(context)
    queue = f"p5-{uuid.uuid4().hex[:8]}"
    log = workdir / "w.log"
    async with (
        worker_process(context.address, queue, real.worker_kubeconfig, log) as w,
        real.admin_stack(context.client, queue) as stack,
    ):
        namespace = stack.namespace()
        manifests = [
            example(
                "rayjob-httpmode",
                namespace,
                rename=f"p5-{index}",
                entrypoint="echo hi",
                shutdownAfterJobFinishes=True,
            )
            for index in range(count)
        ]
        meter = CpuMeter(
            {
                "worker": w.pid,
                "kube-apiserver": real.plane.processes["kube-apiserver"].pid,
                "node agent": node_agent_pid(real),
                "server": server_pid(context),
            },
            context.database_pid,
        )
        batch = await timed_batch("P5 RayJob lifecycles", [stack.start(m) for m in manifests], meter)
        handle = context.client.get_workflow_handle(f"rayjob/{namespace}/p5-0")
        events = (await handle.fetch_history()).to_json_dict()["events"]
    return batch, activity_counts(events)


@asynccontextmanager
async def bare_worker(context: BenchContext, queue: str) -> AsyncIterator[int]:
    env = {"TEMPORAL_ADDRESS": context.address, "RAYPILOT_TASK_QUEUE": queue}
    log = context.scratch("p5-bare") / "w.log"
    async with started_process(["-m", "bench.bare_worker"], env, log) as process:
        yield process.pid


async def bare(context: BenchContext, count: int, activities: int, local_activities: int) -> Batch:
    queue = f"p5-bare-{uuid.uuid4().hex[:8]}"
    async with bare_worker(context, queue) as pid:
        starts = [
            context.client.start_workflow(
                "BenchBareLifecycle",
                args=[activities, local_activities],
                id=f"bare-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )
            for _ in range(count)
        ]
        meter = CpuMeter({"worker": pid, "server": server_pid(context)}, context.database_pid)
        return await timed_batch("P5 bare workflows", starts, meter)


def shown(ms: float | None) -> str:
    return "?" if ms is None else f"{ms:.0f}"


def temporal_bound(ours: CpuPerLifecycle, bare: CpuPerLifecycle) -> str:
    """What the CPU per lifecycle allows on shared cores even with a free simulator: bare's worker + server
    over ours, and the worker + server CPU per lifecycle at which the target ratio is reachable."""
    if ours.server_ms is None or bare.server_ms is None:
        return ""
    reference = (bare.worker_ms, bare.server_ms)
    reachable = cpu_bound_ratio(reference, (ours.worker_ms, ours.server_ms))
    needed = cpu_for_ratio(reference, RATIO_TARGET)
    return f"; CPU bound {reachable:.2f} (worker + server {needed:.0f} ms for {RATIO_TARGET})"


def server_shown(cpu: CpuPerLifecycle) -> str:
    database = "" if cpu.database_ms is None else f" + PostgreSQL {cpu.database_ms:.0f} ms"
    return f"server {shown(cpu.server_ms)} ms{database}"


def figure(count: int, ours_batch: Batch, bare_batch: Batch, activities: tuple[int, int]) -> Figure:
    rate_ratio = ratio(ours_batch.rate, bare_batch.rate)
    # Worker CPU per lifecycle, bare over ours: the share of bare Temporal's speed one worker keeps.
    worker_ratio = ratio(bare_batch.cpu.worker_ms, ours_batch.cpu.worker_ms)
    ours_cpu, bare_cpu = ours_batch.cpu, bare_batch.cpu
    bound = temporal_bound(ours_cpu, bare_cpu)
    return Figure(
        "P5",
        f"RayJob lifecycles/s, {count} at once, one worker process",
        f"{ours_batch.rate:.2f}/s on the real stack ({activities[0]} activities + {activities[1]} local per "
        f"lifecycle); CPU per lifecycle: worker {shown(ours_cpu.worker_ms)} ms, stack (kube-apiserver + "
        f"node agent) {shown(ours_cpu.stack_ms)} ms, {server_shown(ours_cpu)}",
        f"bare Temporal, same activities: {bare_batch.rate:.2f}/s; CPU per lifecycle: worker "
        f"{shown(bare_cpu.worker_ms)} ms, {server_shown(bare_cpu)}; ratio {rate_ratio:.2f} "
        f"(worker CPU: {worker_ratio:.2f}){bound}",
        f">= {RATIO_TARGET} of bare",
        rate_ratio >= RATIO_TARGET,
    )


async def run(context: BenchContext) -> list[Figure]:
    count = SMOKE_LIFECYCLES if context.smoke else LIFECYCLES
    ours_batch, activities = await ours(context, count)
    bare_batch = await bare(context, count, *activities)
    return [figure(count, ours_batch, bare_batch, activities)]
