"""P7, second series: N RayJobs each with its OWN RayCluster of simulated Ray (HTTPMode), so that each waits
for its cluster in Initializing. Through the namespace's Kubernetes observer that wait is a signal, not a
heartbeating `k8s.wait_raycluster` activity: the figure is the ramp to all RUNNING, the worker's activity
slots, its RSS and CPU, and the worker's Kubernetes API requests (lists, watches, gets; the API server's audit
log) while the RayJobs start and while they hold. Each cluster is a head Pod on the real stack (KubeRay
makes it, the node agent runs its simulated Ray as a process), so this series stays small
(`OWN_CLUSTERS_MAX`); the selector series measures the hold at large N.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from bench.jobs_support import (
    SHARED_CLUSTER,
    SharedCluster,
    bench_task_queue,
    held_window,
    http_mode_rayjob,
    start_rayjobs,
    terminate_all,
)
from bench.progress import Progress
from bench.realkube_counts import without_proxy
from bench.suite import BenchContext
from sandbox.testing import raycluster_manifest, wait_until
from tests.readiness import with_quick_readiness

OWN_CLUSTERS_MAX = 100
WAITS = ("watch rayclusters", "list rayclusters", "get rayclusters")


@dataclass(frozen=True)
class OwnClusterPoint:
    jobs: int
    ramp_s: float
    rss_bytes: int
    cpu_share: float
    ramp_cluster_requests: int  # the worker's list/watch/get of RayClusters while N RayJobs started
    hold_api_rps: float  # the worker's Kubernetes API requests a second in the window, proxy excluded
    slots_used: int | None


def own_cluster_rayjob(namespace: str, name: str, entrypoint: str) -> dict[str, Any]:
    cluster = raycluster_manifest("unused", namespace, workers=0)
    with_quick_readiness(cluster["spec"])
    return http_mode_rayjob(namespace, name, entrypoint, {"rayClusterSpec": cluster["spec"]})


def delete_own_clusters(shared: SharedCluster) -> None:
    custom = shared.stack.custom
    listed: dict[str, Any] = custom.list_namespaced_custom_object(
        "ray.io", "v1", shared.namespace, "rayclusters"
    )
    for cluster in listed["items"]:
        name = cluster["metadata"]["name"]
        if name != SHARED_CLUSTER:
            custom.delete_namespaced_custom_object("ray.io", "v1", shared.namespace, "rayclusters", name)


async def _all_running(handles: list[Any], bar: Progress) -> bool:
    async def state(handle: Any) -> str:
        try:
            status = await handle.query("status")
        except (RPCError, WorkflowQueryFailedError):  # a busy worker: asked again at the next poll
            return ""
        return str(status.get("jobStatus") or "")

    states = Counter(await asyncio.gather(*(state(handle) for handle in handles)))
    bar.set(states["RUNNING"])
    return states["RUNNING"] >= len(handles)


async def measure_own_clusters(
    context: BenchContext, shared: SharedCluster, jobs: int, window_s: float
) -> OwnClusterPoint:
    task_queue = bench_task_queue("p7o")
    async with shared.worker(context, task_queue, context.scratch("p7") / f"worker-own-{jobs}.log") as worker:
        tag = uuid.uuid4().hex[:4]
        names = [f"p7o-{tag}-{index}" for index in range(jobs)]
        manifests = [own_cluster_rayjob(shared.namespace, name, "sleep 100000") for name in names]
        ramp_mark = shared.api_mark()
        started = time.monotonic()
        handles = await start_rayjobs(context.client, task_queue, manifests, f"P7 own clusters N={jobs}")
        try:
            with Progress(f"P7 own clusters RUNNING N={jobs}", jobs) as bar:
                await wait_until(
                    lambda: _all_running(handles, bar),
                    within=120 + jobs * 2.0,
                    interval=1.0,
                    what=f"{jobs} RayJobs with their own clusters RUNNING",
                )
            ramp = time.monotonic() - started
            ramp_requests = shared.api_requests_since(ramp_mark)
            hold_mark = shared.api_mark()
            held = await held_window(worker.pid, window_s)
            hold = shared.api_requests_since(hold_mark)
            slots = await worker.activity_slots_used()
        finally:
            await terminate_all(handles)
            # Each cluster's head is a process on the real stack: none outlives its point.
            await asyncio.to_thread(delete_own_clusters, shared)
    return OwnClusterPoint(
        jobs=jobs,
        ramp_s=ramp,
        rss_bytes=held.rss_bytes,
        cpu_share=held.cpu_share,
        ramp_cluster_requests=sum(ramp_requests[key] for key in WAITS),
        hold_api_rps=without_proxy(hold) / held.wall_s,
        slots_used=slots,
    )
