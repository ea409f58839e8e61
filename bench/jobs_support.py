"""What P3 and P7 share: the real stack (bench/realkube_stack.py) with one shared RayCluster of simulated Ray,
the real worker (`worker.py`, raypilot's ServiceAccount) in a process of its own (so its RSS and CPU are its
own), RayJobs started by the hundred through `clusterSelector`, and the counts: the worker's Kubernetes API
requests from the API server's audit log, the shared head's requests and Ray jobs from its own counters
(bench/realkube_counts.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client, WorkflowHandle
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError

from bench.progress import Progress
from bench.realkube_counts import (
    WORKER_USER,
    AuditMark,
    HeadCounters,
    audit_mark,
    audited_since,
    head_counters,
)
from bench.realkube_stack import SharedRealStack, shared_real_stack
from bench.suite import BenchContext
from models.naming import head_service_name, workflow_id
from sandbox.ray.processes import every_process_stat, stat_fields
from sandbox.testing import ray_manifest, raycluster_manifest, wait_until
from tests.integration.rayjob_support import create_raycluster, dashboard, head_pod_name
from tests.integration.stack import Stack

REPOSITORY = Path(__file__).resolve().parents[1]
SHARED_CLUSTER = "shared-cluster"
START_CONCURRENCY = 32
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WORKFLOW_TASK_COUNT = "temporal_workflow_task_execution_latency_count"


@dataclass(frozen=True)
class ProcessSample:
    rss_bytes: int
    cpu_seconds: float


def sample_process(pid: int) -> ProcessSample:
    """RSS (VmRSS) and user+system CPU time of a live process, from /proc."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    fields = stat_fields(pid)
    return ProcessSample(rss, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)


def tree_cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process and of its children: the live ones, and those it has reaped."""
    ticks = sum(int(value) for value in stat_fields(pid)[11:15])  # utime, stime, cutime, cstime
    for _, child_fields in every_process_stat():
        if int(child_fields[1]) == pid:
            ticks += int(child_fields[11]) + int(child_fields[12])
    return ticks / CLOCK_TICKS


@dataclass(frozen=True)
class HeldWindow:
    """A worker process over a window of holding: its RSS at the end, its CPU share over the window."""

    wall_s: float
    rss_bytes: int
    cpu_share: float


async def held_window(pid: int, seconds: float) -> HeldWindow:
    """Waits `seconds` and says what the process `pid` used meanwhile."""
    cpu_before, wall_before = sample_process(pid).cpu_seconds, time.monotonic()
    await asyncio.sleep(seconds)
    sample = sample_process(pid)
    wall = time.monotonic() - wall_before
    return HeldWindow(wall, sample.rss_bytes, (sample.cpu_seconds - cpu_before) / wall)


def bench_task_queue(series: str) -> str:
    """A task queue of its own for one run or point of `series` (no other worker takes its tasks)."""
    return f"bench-{series}-{uuid.uuid4().hex[:6]}"


@dataclass
class SharedCluster:
    """The real stack, a namespace with one ready RayCluster of simulated Ray, and its head Pod."""

    real: SharedRealStack
    stack: Stack  # the admin's view
    namespace: str
    head_pod: str

    def worker(
        self, context: BenchContext, task_queue: str, log_path: Path
    ) -> AbstractAsyncContextManager[WorkerProcess]:
        """raypilot's worker for `task_queue` in a process of its own, as its ServiceAccount on this stack."""
        return worker_process(context.address, task_queue, self.real.worker_kubeconfig, log_path)

    def api_mark(self) -> AuditMark:
        return audit_mark(self.real.plane.audit_log)

    def api_requests_since(self, mark: AuditMark) -> Counter[str]:
        """raypilot's worker's requests in the namespace since `mark` (the audit log)."""
        return audited_since(self.real.plane.audit_log, WORKER_USER, self.namespace, mark)

    async def head(self) -> HeadCounters:
        return await head_counters(self.stack, self.namespace, self.head_pod)

    async def ray_job_states(self) -> Counter[str]:
        return (await self.head()).job_states

    async def ray_job(self, submission_id: str) -> dict[str, Any]:
        """A Ray job's details from the shared dashboard (one request of it: read after the counts)."""
        answer = await dashboard(
            self.stack, self.namespace, head_service_name(SHARED_CLUSTER), "GET", f"/api/jobs/{submission_id}"
        )
        answer.raise_for_status()
        found: dict[str, Any] = answer.json()
        return found


@asynccontextmanager
async def shared_cluster(context: BenchContext) -> AsyncIterator[SharedCluster]:
    real = await shared_real_stack(context)
    async with real.admin_stack(context.client, "") as stack:
        namespace = stack.namespace()
        manifest = raycluster_manifest(SHARED_CLUSTER, namespace, workers=0)
        await create_raycluster(stack, manifest, within=120)
        yield SharedCluster(real, stack, namespace, head_pod_name(stack, namespace, SHARED_CLUSTER))


# How long a stopped worker process may take to exit before it is killed.
WORKER_STOP_SECONDS = 5.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class WorkerProcess:
    process: subprocess.Popen[bytes]
    metrics_url: str

    @property
    def pid(self) -> int:
        return self.process.pid

    async def _metrics(self) -> list[str]:
        async with httpx.AsyncClient(timeout=10.0) as http:
            return (await http.get(self.metrics_url)).text.splitlines()

    async def activity_slots_used(self) -> int | None:
        """Activity slots in use, from the SDK's `temporal_worker_task_slots_used` (None if not exported)."""
        for line in await self._metrics():
            if line.startswith("temporal_worker_task_slots_used") and 'worker_type="ActivityWorker"' in line:
                return int(float(line.rsplit(" ", 1)[1]))
        return None

    async def workflow_tasks_run(self) -> int | None:
        """Workflow tasks the worker has run so far (the count of the SDK's execution latency histogram)."""
        counts = [
            float(line.rsplit(" ", 1)[1])
            for line in await self._metrics()
            if line.startswith(WORKFLOW_TASK_COUNT) and line[len(WORKFLOW_TASK_COUNT)] in "{ "
        ]
        return int(sum(counts)) if counts else None


@asynccontextmanager
async def worker_process(
    address: str, task_queue: str, kubeconfig: Path, log_path: Path
) -> AsyncIterator[WorkerProcess]:
    """`python worker.py` against the dev server and the Kubernetes API of `kubeconfig`; stopped by its PID on
    exit."""
    metrics_port = free_port()
    env = {
        "TEMPORAL_ADDRESS": address,
        "RAYPILOT_TASK_QUEUE": task_queue,
        "RAYPILOT_JOB_OBSERVER": "true",  # the observer is what P3 and P7 measure
        "KUBECONFIG": str(kubeconfig),
        "RAYPILOT_DASHBOARD_ACCESS": "proxy",
        "RAYPILOT_METRICS_PORT": f"127.0.0.1:{metrics_port}",
    }
    async with started_process([str(REPOSITORY / "worker.py")], env, log_path) as process:
        yield WorkerProcess(process, f"http://127.0.0.1:{metrics_port}/metrics")


@asynccontextmanager
async def started_process(
    arguments: Sequence[str], env: dict[str, str], log_path: Path
) -> AsyncIterator[subprocess.Popen[bytes]]:
    """`python <arguments>` with `env` added to this environment, once its log says "worker started";
    stopped by its PID on exit."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(  # noqa: ASYNC220 (starting it does not block)
            [sys.executable, *arguments],
            cwd=REPOSITORY,
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:

        def started() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"the worker exited with {process.returncode}; see {log_path}")
            return "worker started" in log_path.read_text(errors="replace")

        await wait_until(started, within=60, interval=0.2, what="the worker process started")
        yield process
    finally:
        # SIGTERM, then SIGKILL after a few seconds: the worker would hold its 30 s grace period for the
        # cluster observer's activity, which runs until cancelled, and nothing after a measurement needs it.
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)


def process_with_arguments(*arguments: bytes) -> int | None:
    """The first process (from /proc) whose command line holds every one of `arguments`; None if none does."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            found = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if all(argument in found for argument in arguments):
            return int(entry.name)
    return None


def dev_server_pid(address: str) -> int | None:
    """The Temporal dev server's process serving `address` (`host:port`), from /proc; None if not found."""
    return process_with_arguments(b"start-dev", address.rsplit(":", 1)[-1].encode())


def server_pid(context: BenchContext) -> int | None:
    """The Temporal server's process: the one the suite started and knows, else the dev server at the
    context's address."""
    return context.server_pid if context.server_pid is not None else dev_server_pid(context.address)


def node_agent_pid(real: SharedRealStack) -> int | None:
    """The real stack's node agent (`python -m sandbox.nodeagent --kubeconfig <the stack's admin>`)."""
    return process_with_arguments(b"sandbox.nodeagent", str(real.plane.kubeconfig).encode())


def http_mode_rayjob(namespace: str, name: str, entrypoint: str, cluster: dict[str, Any]) -> dict[str, Any]:
    """An HTTPMode RayJob running `entrypoint` on the cluster `cluster` names (`clusterSelector`) or makes
    (`rayClusterSpec`)."""
    return ray_manifest(
        "RayJob", name, namespace, {"submissionMode": "HTTPMode", "entrypoint": entrypoint, **cluster}
    )


def selector_rayjob(namespace: str, name: str, entrypoint: str) -> dict[str, Any]:
    """An HTTPMode RayJob on the shared cluster (no cluster of its own, nothing to delete)."""
    return http_mode_rayjob(
        namespace, name, entrypoint, {"clusterSelector": {"ray.io/cluster": SHARED_CLUSTER}}
    )


async def start_rayjobs(
    client: Client, task_queue: str, manifests: Sequence[dict[str, Any]], label: str
) -> list[WorkflowHandle[Any, Any]]:
    """Start one RayJobWorkflow per manifest, START_CONCURRENCY at a time, with a progress bar."""
    gate = asyncio.Semaphore(START_CONCURRENCY)
    handles: list[WorkflowHandle[Any, Any]] = []
    with Progress(label, len(manifests)) as bar:

        async def one(manifest: dict[str, Any]) -> None:
            metadata = manifest["metadata"]
            async with gate:
                handle = await client.start_workflow(
                    "RayJobWorkflow",
                    manifest,
                    id=workflow_id("RayJob", metadata["namespace"], metadata["name"]),
                    task_queue=task_queue,
                    execution_timeout=timedelta(hours=2),
                    search_attributes=TypedSearchAttributes.empty,
                )
            handles.append(handle)
            bar.advance()

        await asyncio.gather(*(one(manifest) for manifest in manifests))
    return handles


@dataclass(frozen=True)
class HeldRayJobs:
    handles: list[WorkflowHandle[Any, Any]]
    ramp_s: float  # the first start -> every Ray job RUNNING


@asynccontextmanager
async def held_rayjobs(
    context: BenchContext,
    shared: SharedCluster,
    task_queue: str,
    prefix: str,
    entrypoints: Sequence[str],
    label: str,
) -> AsyncIterator[HeldRayJobs]:
    """One selector RayJob on the shared cluster per entrypoint (named `<prefix>-<tag>-<index>`), started
    on `task_queue` and held until every one's Ray job runs; their workflows are terminated on leaving."""
    tag = uuid.uuid4().hex[:4]
    manifests = [
        selector_rayjob(shared.namespace, f"{prefix}-{tag}-{index}", entrypoint)
        for index, entrypoint in enumerate(entrypoints)
    ]
    jobs = len(manifests)
    running_before = (await shared.ray_job_states())["RUNNING"]
    started = time.monotonic()
    handles = await start_rayjobs(context.client, task_queue, manifests, f"{label} start N={jobs}")
    try:
        within = 120 + jobs * 0.5
        await wait_for_states(
            shared, "RUNNING", running_before + jobs, within=within, label=f"{label} running"
        )
        yield HeldRayJobs(handles, time.monotonic() - started)
    finally:
        await terminate_all(handles)


async def results_in_order(handles: Sequence[WorkflowHandle[Any, Any]], label: str) -> list[dict[str, Any]]:
    """Each workflow's result, awaited in order, with a progress bar."""
    results: list[dict[str, Any]] = []
    with Progress(label, len(handles)) as bar:
        for handle in handles:
            results.append(await handle.result())
            bar.advance()
    return results


async def terminate_all(handles: Sequence[WorkflowHandle[Any, Any]]) -> None:
    gate = asyncio.Semaphore(START_CONCURRENCY)

    async def one(handle: WorkflowHandle[Any, Any]) -> None:
        async with gate:
            with contextlib.suppress(RPCError):  # already closed
                await handle.terminate("benchmark over")

    await asyncio.gather(*(one(handle) for handle in handles))


async def wait_for_states(
    shared: SharedCluster, state: str, count: int, *, within: float, label: str
) -> float:
    """Until `count` Ray jobs on the shared dashboard are in `state`; returns how long that took."""
    started = time.monotonic()
    with Progress(label, count) as bar:

        async def reached() -> bool:
            seen = (await shared.ray_job_states())[state]
            bar.set(min(seen, count))
            return seen >= count

        await wait_until(reached, within=within, interval=0.5, what=f"{count} Ray jobs {state}")
    return time.monotonic() - started
