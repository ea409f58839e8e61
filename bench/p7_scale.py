"""P7: N concurrent *running* RayJobs held by one worker process (today's design: one polling wait per job).

For each N of the scale: N HTTPMode RayJobs on one shared RayCluster of simulated Ray on the real stack
(`sleep` entrypoints that outlast the run; the simulated head holds a Ray job as one asyncio task, no
process), the real worker in its own process (raypilot's ServiceAccount). Once every Ray job runs, a quiet
window measures the worker's RSS and CPU share, the dashboard request rate (the head's own counters, the
kubelet's probes left out), the worker's Kubernetes API request rate (the API server's audit log), and how
many distinct jobs were polled in it (a job whose wait found no activity slot is not watched at all).
Reference: KubeRay's 1 dashboard GET per job per 3 s, extrapolated to N.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from bench.arithmetic import KUBERAY_RAYJOB_TICK_S, Figure, ratio
from bench.jobs_support import (
    SHARED_CLUSTER,
    SharedCluster,
    bench_task_queue,
    held_rayjobs,
    held_window,
    shared_cluster,
)
from bench.p7_own_clusters import OWN_CLUSTERS_MAX, OwnClusterPoint, measure_own_clusters
from bench.realkube_counts import without_probes, without_proxy
from bench.suite import BenchContext
from models.naming import head_service_name
from wire.observer import (
    WATCHES_QUERY,
    JobWatch,
    WatchChanges,
    observer_shard,
    observer_shards_from_env,
    observer_workflow_id,
)
from wire.watch_book import added_watches

RSS_TARGET_BYTES = int(1.5 * 2**30)
# An observer that lists a cluster's jobs once a second stays within this whatever N is.
PER_CLUSTER_RPS = 1.0
# The observer lists a cluster's jobs once a second when idle; somewhat less counts as idle.
IDLE_LISTS_PER_S = 0.8
# Held jobs that nothing changes need no workflow task; the observer's own (a continue-as-new) may come.
IDLE_TASKS_PER_S = 1.0


@dataclass(frozen=True)
class ScalePoint:
    jobs: int
    ramp_s: float
    settle_s: float  # after the ramp, until the observer was back at its idle tick and the worker idle
    window_s: float
    rss_bytes: int
    cpu_share: float  # CPU seconds per wall second in the window
    dashboard_rps: float
    api_rps: float  # the worker's Kubernetes API requests, proxied dashboard calls excluded
    jobs_polled: int  # distinct jobs read in the window
    slots_used: int | None  # the worker's activity slots in use at the window's end


async def observer_watches(context: BenchContext, task_queue: str, namespace: str) -> int:
    """How many Ray jobs the shared cluster's observer watches (0 without an observer)."""
    shard = observer_shard(head_service_name(SHARED_CLUSTER), observer_shards_from_env(os.environ))
    handle = context.client.get_workflow_handle(observer_workflow_id(task_queue, namespace, shard))
    try:
        book = await handle.query(WATCHES_QUERY, 0, result_type=WatchChanges)
    except (RPCError, WorkflowQueryFailedError):
        return 0
    return len(added_watches(book, dict[str, JobWatch]))  # a large book answers packed


class RunsWorkflowTasks(Protocol):
    """A worker process, or several on one task queue (bench/worker_group.py)."""

    async def workflow_tasks_run(self) -> int | None: ...


async def settled(shared: SharedCluster, worker: RunsWorkflowTasks, probe_s: float, within: float) -> float:
    """Waits until the ramp's work is done: the cluster's observer is back at its idle tick (at least one
    list of the cluster's jobs a second over `probe_s`) and the worker runs hardly any workflow task. Until
    then the observer is still delivering the ramp's changes (10,000 RUNNING views are 10,000 signals) and the
    worker still running the RayJobs' tasks for them; a window measured before would show the end of the
    ramp, not jobs held. Returns the wait."""
    began = time.monotonic()
    while True:
        lists_before, tasks_before = await dashboard_requests(shared), await worker.workflow_tasks_run()
        await asyncio.sleep(probe_s)
        lists = sum(_delta(await dashboard_requests(shared), lists_before).values())
        tasks_after = await worker.workflow_tasks_run()
        tasks = None if tasks_before is None or tasks_after is None else tasks_after - tasks_before
        if lists >= probe_s * IDLE_LISTS_PER_S and (tasks is None or tasks <= probe_s * IDLE_TASKS_PER_S):
            return time.monotonic() - began
        if time.monotonic() - began > within:
            raise TimeoutError(f"the observer and the worker did not settle within {within:.0f} s")


async def dashboard_requests(shared: SharedCluster) -> Counter[str]:
    """The shared head's requests per route, the kubelet's probes left out."""
    return without_probes((await shared.head()).routes)


async def dashboard_paths(shared: SharedCluster) -> Counter[str]:
    return without_probes((await shared.head()).paths)


def _delta(after: Counter[str], before: Counter[str]) -> Counter[str]:
    return Counter({key: after[key] - before[key] for key in after if after[key] != before[key]})


async def measure_point(
    context: BenchContext, shared: SharedCluster, jobs: int, window_s: float, settle_s: float
) -> ScalePoint:
    task_queue = bench_task_queue("p7")
    log = context.scratch("p7") / f"worker-{jobs}.log"
    async with (
        shared.worker(context, task_queue, log) as worker,
        held_rayjobs(context, shared, task_queue, "p7", ["sleep 100000"] * jobs, "P7") as running,
    ):
        settle = await settled(shared, worker, settle_s, within=120 + jobs * 0.1)
        dashboard_before, api_mark = await dashboard_requests(shared), shared.api_mark()
        paths_before = await dashboard_paths(shared)
        held = await held_window(worker.pid, window_s)
        dashboard = _delta(await dashboard_requests(shared), dashboard_before)
        api = shared.api_requests_since(api_mark)
        polled = _delta(await dashboard_paths(shared), paths_before)
        slots = await worker.activity_slots_used()
        watched = await observer_watches(context, task_queue, shared.namespace)
    prefix = "GET /api/jobs/"
    # Requests the API server received in the window but had not logged at its end (a watch's start is
    # logged at once, a short request when answered) are not counted: a few at most in 20 s.
    api_own = without_proxy(api)
    return ScalePoint(
        jobs=jobs,
        ramp_s=running.ramp_s,
        settle_s=settle,
        window_s=held.wall_s,
        rss_bytes=held.rss_bytes,
        cpu_share=held.cpu_share,
        dashboard_rps=sum(dashboard.values()) / held.wall_s,
        api_rps=api_own / held.wall_s,
        # A job is watched when it polls its own path (the polling wait) or is in the observer's book.
        jobs_polled=max(sum(1 for key in polled if key.startswith(prefix) and key.count("/") == 3), watched),
        slots_used=slots,
    )


def scale_figures(points: list[ScalePoint]) -> list[Figure]:
    figures: list[Figure] = []
    for point in points:
        kuberay_rps = point.jobs / KUBERAY_RAYJOB_TICK_S
        # Held: every job watched, and the cluster still listed in the window (an observer that stopped
        # listing would also show a low request rate).
        held = point.jobs_polled >= point.jobs and point.dashboard_rps > 0
        figures.append(
            Figure(
                "P7",
                f"N={point.jobs} running RayJobs, one worker",
                f"RSS {point.rss_bytes / 2**20:.0f} MiB, CPU {point.cpu_share:.2f} core, "
                f"dashboard {point.dashboard_rps:.1f} req/s ({point.dashboard_rps / point.jobs:.3f}/job), "
                f"worker's K8s API {point.api_rps:.2f} req/s, jobs polled in {point.window_s:.0f} s: "
                f"{point.jobs_polled}/{point.jobs}, activity slots used {point.slots_used}/100",
                f"KubeRay: dashboard {kuberay_rps:.1f} req/s ({1 / KUBERAY_RAYJOB_TICK_S:.3f}/job); "
                f"ours/KubeRay {ratio(point.dashboard_rps, kuberay_rps):.2f}",
                "all held, RSS <= 1.5 GiB, load independent of N (<= 1 dashboard req/s per cluster)",
                held and point.rss_bytes <= RSS_TARGET_BYTES and point.dashboard_rps <= PER_CLUSTER_RPS,
                [
                    f"N={point.jobs}: ramp to all RUNNING {point.ramp_s:.0f} s, observer and worker settled "
                    f"{point.settle_s:.0f} s later, window {point.window_s:.0f} s"
                ],
            )
        )
    return figures


async def run(context: BenchContext) -> list[Figure]:
    sizes = [3] if context.smoke else list(context.scale)
    window, settle = (2.0, 2.0) if context.smoke else (20.0, 10.0)
    points: list[ScalePoint] = []
    own_sizes = [1] if context.smoke else sorted({min(n, OWN_CLUSTERS_MAX) for n in context.scale})
    own_points: list[OwnClusterPoint] = []

    async def shared_cluster_points() -> None:
        for jobs in sizes:
            point = await measure_point(context, shared, jobs, window, settle)
            context.log(f"   P7 N={jobs}: {point}")
            points.append(point)

    async def own_cluster_points() -> None:
        for jobs in own_sizes:
            own = await measure_own_clusters(context, shared, jobs, window)
            context.log(f"   P7 own clusters N={jobs}: {own}")
            own_points.append(own)

    # Each point with a worker of its own on a task queue of its own; the own clusters' heads are not the
    # shared one, whose requests the shared-cluster points count.
    async with shared_cluster(context) as shared:
        await context.in_turn(shared_cluster_points, own_cluster_points)
    return scale_figures(points) + own_cluster_figures(own_points)


def own_cluster_figures(points: list[OwnClusterPoint]) -> list[Figure]:
    """The Initializing waits of RayJobs with their own RayCluster: through the Kubernetes observer one
    activity slot per namespace and a fixed number of RayCluster lists and watches, whatever N. Their Ray
    jobs wait on the namespace's Ray job observers: the clusters spread over the shards, one slot each."""
    slots_bound = 1 + observer_shards_from_env(os.environ)
    figures: list[Figure] = []
    for point in points:
        figures.append(
            Figure(
                "P7",
                f"N={point.jobs} RayJobs, each with its own RayCluster, one worker",
                f"ramp to all RUNNING {point.ramp_s:.0f} s; RayCluster list/watch/get while starting: "
                f"{point.ramp_cluster_requests}; K8s API {point.hold_api_rps:.2f} req/s holding; "
                f"RSS {point.rss_bytes / 2**20:.0f} MiB, CPU {point.cpu_share:.2f} core, "
                f"activity slots used {point.slots_used}/100",
                f"per-RayJob wait activity: >= {point.jobs} RayCluster watches and {point.jobs} slots "
                "while starting",
                f"RayCluster requests and slots independent of N (slots <= {slots_bound}: one Kubernetes "
                "observer and one Ray job observer per shard)",
                own_clusters_met(point, slots_bound),
            )
        )
    return figures


# Below this many jobs the few RayCluster lists and watches of the start are not fewer than the jobs, so a
# row with so few (the smoke's N = 1) reports without a verdict.
OWN_CLUSTERS_JUDGED_FROM = 10


def own_clusters_met(point: OwnClusterPoint, slots_bound: int) -> bool | None:
    """Fewer RayCluster requests than jobs while they started, and no more slots than the observers'."""
    if point.jobs < OWN_CLUSTERS_JUDGED_FROM:
        return None
    return point.ramp_cluster_requests < point.jobs and (point.slots_used or 0) <= slots_bound
