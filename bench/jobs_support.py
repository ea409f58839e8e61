"""What P3 and P7 share: the simulated sandbox with one shared RayCluster, the real worker (`worker.py`) in
a process of its own (so its RSS and CPU are its own), RayJobs started by the hundred through
`clusterSelector`, and the request counters of the sandbox's API server and simulated dashboard.
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
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
from kubernetes import client as k8s
from temporalio.client import Client, WorkflowHandle
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError

from bench.progress import Progress
from models.naming import workflow_id
from sandbox.ray.simulated import SimulatedDashboard
from sandbox.ray.simulated_jobs import SimulatedJobs
from sandbox.testing import SandboxThread, raycluster_manifest, ready_raycluster, wait_until
from tests.integration.stack import running_sandbox_thread

REPOSITORY = Path(__file__).resolve().parents[1]
SHARED_CLUSTER = "shared-cluster"
START_CONCURRENCY = 32
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WORKFLOW_TASK_COUNT = "temporal_workflow_task_execution_latency_count"
T = TypeVar("T")


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
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    return ProcessSample(rss, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)


@dataclass
class SharedCluster:
    """The sandbox, a namespace with one ready RayCluster, and its simulated dashboard."""

    cluster: SandboxThread
    api_client: Any
    namespace: str

    @property
    def dashboard(self) -> SimulatedDashboard:
        runtime = self.cluster.sandbox.rayclusters.head_runtime(self.namespace, SHARED_CLUSTER)
        assert runtime is not None, "the shared RayCluster has no head"
        head = runtime.head
        assert isinstance(head, SimulatedDashboard)
        return head

    def api_requests(self) -> Counter[str]:
        return Counter(self.cluster.sandbox.api.requests)

    def dashboard_requests(self) -> Counter[str]:
        return Counter(self.dashboard.requests)

    def dashboard_paths(self) -> Counter[str]:
        return Counter(self.dashboard.paths)

    def _on_sandbox_loop(self, read: Callable[[SimulatedJobs], T]) -> T:
        """Read the dashboard's jobs on the sandbox's own loop (they change there)."""

        async def run() -> T:
            jobs = self.dashboard.jobs
            assert jobs is not None, "the shared dashboard is not running"
            return read(jobs)

        return self.cluster.call(run)

    def ray_job_states(self) -> Counter[str]:
        return self._on_sandbox_loop(lambda jobs: Counter(job.status for job in jobs.jobs.values()))

    def ray_job(self, submission_id: str) -> dict[str, Any]:
        return self._on_sandbox_loop(lambda jobs: jobs.jobs[submission_id].details())


@asynccontextmanager
async def shared_cluster(workdir: Path) -> AsyncIterator[SharedCluster]:
    async with running_sandbox_thread(workdir, "simulated") as cluster:
        api_client = cluster.api_client()
        try:
            core = k8s.CoreV1Api(api_client)
            custom = k8s.CustomObjectsApi(api_client)
            namespace = f"bench-{uuid.uuid4().hex[:6]}"
            core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace)))
            manifest = raycluster_manifest(SHARED_CLUSTER, namespace, workers=0)
            custom.create_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", manifest)

            async def ready() -> dict[str, Any] | None:
                return await asyncio.to_thread(ready_raycluster, custom, namespace, SHARED_CLUSTER)

            await wait_until(ready, within=60, interval=0.2, what="the shared RayCluster ready")
            yield SharedCluster(cluster, api_client, namespace)
        finally:
            api_client.close()


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
    """`python worker.py` against the dev server and the sandbox; stopped by its PID on exit."""
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


def dev_server_pid(address: str) -> int | None:
    """The Temporal dev server's process serving `address` (`host:port`), from /proc; None if not found."""
    port = address.rsplit(":", 1)[-1]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"start-dev" in arguments and port.encode() in arguments:
            return int(entry.name)
    return None


def selector_rayjob(namespace: str, name: str, entrypoint: str) -> dict[str, Any]:
    """An HTTPMode RayJob on the shared cluster (no cluster of its own, nothing to delete)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "submissionMode": "HTTPMode",
            "entrypoint": entrypoint,
            "clusterSelector": {"ray.io/cluster": SHARED_CLUSTER},
        },
    }


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

        def reached() -> bool:
            seen = shared.ray_job_states()[state]
            bar.set(min(seen, count))
            return seen >= count

        await wait_until(reached, within=within, interval=0.5, what=f"{count} Ray jobs {state}")
    return time.monotonic() - started
