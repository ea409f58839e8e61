"""P7K: N running RayJobs on one shared cluster, raypilot beside KubeRay's operator v1.5.0 itself, in one run
on one real stack (simulated Ray; bench/realkube_stack.py).

At each N of `--scale`, each side in turn gets a namespace of its own with a RayCluster of simulated Ray and N
HTTPMode RayJobs with a clusterSelector on it (`sleep` jobs that outlast the point): KubeRay's as `ray.io/v1`
RayJobs, raypilot's as workflows of its worker (`worker.py` in a process of its own, deploy/'s RBAC). Once
every Ray job runs and the side has settled (raypilot: its observer back at its idle tick and hardly a
workflow task, as P7; KubeRay: every RayJob's status says RUNNING, then `SETTLE_S`), a window of `WINDOW_S`
measures, from /proc, the side's CPU seconds and RSS (KubeRay: its operator's process; raypilot: its
worker's process and, apart, the Temporal dev server's, which serves nothing else meanwhile), the requests
its cluster's dashboard answered (the simulated head's own counters, the kubelet's probes left out), the
side's Kubernetes API requests (the API server's audit log, by its user, in its namespace and cluster-wide),
and the CPU of the API server and of the side's head in the window. Then `PROBES` more RayJobs with 8-11 s
jobs join the N held ones, and their job-end detection latency is measured as P3K does (raypilot: the
`observed` signal in the history; KubeRay: a watch seeing its RayJob's status say the job ended). The sides
alternate which goes first from one N to the next.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, cast

from temporalio.client import WorkflowHandle

from bench.arithmetic import Figure, percentile, ratio
from bench.jobs_support import (
    SharedCluster,
    bench_task_queue,
    results_in_order,
    selector_rayjob,
    server_pid,
    start_rayjobs,
    terminate_all,
    wait_for_states,
)
from bench.kuberay_jobs import (
    TreeMeter,
    create_rayjobs,
    delete_rayjobs,
    kuberay_operator_pid,
    listed,
    pod_pids,
    side_cluster,
)
from bench.p3_detection import sleeps, wait_completed_at
from bench.p3_kuberay import latencies, watch_kuberay_ends
from bench.p7_scale import dashboard_requests, settled
from bench.realkube_counts import KUBERAY_USER, WORKER_USER, audit_mark, audited_since, without_proxy
from bench.realkube_stack import SharedRealStack, shared_real_stack
from bench.suite import BenchContext
from sandbox.testing import wait_until

WINDOW_S = 20.0
SETTLE_S = 10.0
PROBES = 30
HELD = "sleep 100000"


@dataclass(frozen=True)
class SidePoint:
    """One side at one N: its ramp, what it used in the window, and its probes' detection latencies."""

    side: str  # "raypilot" or "KubeRay"
    jobs: int
    ramp_s: float
    window_s: float
    controller_cpu_s: float  # raypilot: its worker process; KubeRay: its operator process
    controller_rss_mib: float
    server_cpu_s: float | None  # raypilot's Temporal dev server (None for KubeRay: it has none)
    server_rss_mib: float | None
    apiserver_cpu_s: float
    head_cpu_s: float  # the side's Ray head (its dashboard answering the side's reads)
    dashboard: Counter[str]  # requests per route in the window
    api: Counter[str]  # the side's Kubernetes API requests in the window, by verb and resource
    latencies: list[float]

    @property
    def dashboard_rps(self) -> float:
        return sum(self.dashboard.values()) / self.window_s

    @property
    def api_rps(self) -> float:
        return without_proxy(self.api) / self.window_s

    @property
    def cpu_s(self) -> float:
        """The side's own CPU seconds in the window: its controller's, and its dev server's if it has one."""
        return self.controller_cpu_s + (self.server_cpu_s or 0.0)


def _delta(after: Counter[str], before: Counter[str]) -> Counter[str]:
    return Counter({key: after[key] - before[key] for key in after if after[key] != before[key]})


@dataclass(frozen=True)
class Window:
    wall_s: float
    use: dict[str, tuple[float, float]]  # name -> (CPU seconds, RSS MiB)
    dashboard: Counter[str]
    api: Counter[str]


async def measured_window(
    shared: SharedCluster, roots: dict[str, list[int]], user: str, seconds: float
) -> Window:
    """`seconds` of holding: the CPU and RSS of `roots` (with the API server and the side's head), the
    side's dashboard requests and `user`'s API requests (in the side's namespace and cluster-wide)."""
    real = shared.real
    meter = TreeMeter(
        {
            **roots,
            "apiserver": [real.plane.processes["kube-apiserver"].pid],
            "head": pod_pids(real, shared.head_pod),
        }
    )
    dashboard_before, mark = await dashboard_requests(shared), audit_mark(real.plane.audit_log)
    meter.start()
    began = time.monotonic()
    await asyncio.sleep(seconds)
    used = meter.stop()
    wall = time.monotonic() - began
    dashboard = _delta(await dashboard_requests(shared), dashboard_before)
    api = audited_since(
        real.plane.audit_log, user, shared.namespace, mark, cluster_wide=True, until=mark.at + wall
    )
    return Window(wall, {name: (use.cpu_s, use.rss_mib) for name, use in used.items()}, dashboard, api)


def side_point(side: str, jobs: int, ramp_s: float, window: Window, latencies_: list[float]) -> SidePoint:
    controller = window.use["controller"]
    server = window.use.get("server")
    return SidePoint(
        side=side,
        jobs=jobs,
        ramp_s=ramp_s,
        window_s=window.wall_s,
        controller_cpu_s=controller[0],
        controller_rss_mib=controller[1],
        server_cpu_s=server[0] if server else None,
        server_rss_mib=server[1] if server else None,
        apiserver_cpu_s=window.use["apiserver"][0],
        head_cpu_s=window.use["head"][0],
        dashboard=window.dashboard,
        api=window.api,
        latencies=latencies_,
    )


async def raypilot_side(context: BenchContext, real: SharedRealStack, jobs: int, probes: int) -> SidePoint:
    window_s, settle_s = (2.0, 2.0) if context.smoke else (WINDOW_S, SETTLE_S)
    async with side_cluster(context, real) as shared:
        queue = bench_task_queue("p7k")
        log = context.scratch("p7k") / f"worker-{jobs}.log"
        async with shared.worker(context, queue, log) as worker:
            manifests = [selector_rayjob(shared.namespace, f"p7k-{i}", HELD) for i in range(jobs)]
            handles: list[WorkflowHandle[Any, Any]] = []
            started = time.monotonic()
            try:
                handles += await start_rayjobs(context.client, queue, manifests, f"P7K raypilot N={jobs}")
                await wait_for_states(
                    shared, "RUNNING", jobs, within=120 + jobs * 0.5, label=f"P7K raypilot running N={jobs}"
                )
                ramp = time.monotonic() - started
                await settled(shared, worker, settle_s, within=120 + jobs * 0.1)
                server = server_pid(context)
                roots = {"controller": [worker.pid], **({"server": [server]} if server else {})}
                window = await measured_window(shared, roots, WORKER_USER, window_s)
                probing = [
                    selector_rayjob(shared.namespace, f"p7k-probe-{i}", f"sleep {length:.3f}")
                    for i, length in enumerate(sleeps(probes, 2.0 if context.smoke else 8.0))
                ]
                probe_handles = await start_rayjobs(context.client, queue, probing, "P7K raypilot probes")
                handles += probe_handles
                results = await results_in_order(probe_handles, "P7K raypilot probes ended")
                found: list[float] = []
                for handle, result in zip(probe_handles, results, strict=True):
                    job = await shared.ray_job(result["jobId"])
                    found.append(await wait_completed_at(handle) - job["end_time"] / 1000)
            finally:
                await terminate_all(handles)
    return side_point("raypilot", jobs, ramp, window, found)


async def kuberay_running(shared: SharedCluster, count: int, within: float) -> None:
    """Until `count` RayJobs of the side's namespace have a status that says their job runs."""

    async def running() -> bool | None:
        items = await asyncio.to_thread(listed, shared.stack, shared.namespace, "rayjobs")
        return sum(1 for item in items if (item.get("status") or {}).get("jobStatus") == "RUNNING") >= count

    _: bool = await wait_until(
        running, within=within, interval=1.0, what=f"KubeRay's {count} RayJobs' status RUNNING"
    )


async def kuberay_side(context: BenchContext, real: SharedRealStack, jobs: int, probes: int) -> SidePoint:
    window_s, settle_s = (2.0, 2.0) if context.smoke else (WINDOW_S, SETTLE_S)
    async with side_cluster(context, real) as shared:
        stack, namespace = shared.stack, shared.namespace
        manifests = [selector_rayjob(namespace, f"p7k-{i}", HELD) for i in range(jobs)]
        started = time.monotonic()
        try:
            await create_rayjobs(stack, manifests, f"P7K KubeRay N={jobs}")
            await wait_for_states(
                shared, "RUNNING", jobs, within=120 + jobs * 0.5, label=f"P7K KubeRay running N={jobs}"
            )
            ramp = time.monotonic() - started
            await kuberay_running(shared, jobs, within=120 + jobs * 0.1)
            await asyncio.sleep(settle_s)  # KubeRay's reconciles of its own status writes
            window = await measured_window(
                shared, {"controller": [kuberay_operator_pid(real)]}, KUBERAY_USER, window_s
            )
            seen: dict[str, float] = {}
            watching = threading.Thread(
                target=watch_kuberay_ends, args=(stack, namespace, probes, seen), daemon=True
            )
            watching.start()
            lengths = sleeps(probes, 2.0 if context.smoke else 8.0)
            names = [f"p7k-probe-{i}" for i in range(probes)]
            probing = [
                selector_rayjob(namespace, name, f"sleep {length:.3f}")
                for name, length in zip(names, lengths, strict=True)
            ]
            await create_rayjobs(stack, probing, "P7K KubeRay probes")
            await asyncio.to_thread(watching.join, 600)
            assert len(seen) == probes, f"KubeRay ended {len(seen)} of {probes} probe RayJobs"
            found: list[float] = []
            for name in names:
                rayjob = stack.custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", name)
                job = await shared.ray_job(cast(dict[str, Any], rayjob)["status"]["jobId"])
                found.append(seen[name] - job["end_time"] / 1000)
        finally:
            await delete_rayjobs(stack, namespace, within=120 + jobs * 0.5)
    return side_point("KubeRay", jobs, ramp, window, found)


async def run(context: BenchContext) -> list[Figure]:
    sizes = [3] if context.smoke else list(context.scale)
    probes = 3 if context.smoke else PROBES
    real = await shared_real_stack(context)
    figures: list[Figure] = []
    for index, jobs in enumerate(sizes):
        # Alternating, so that neither side always meets the machine as the other left it.
        # Each side's point is logged as soon as it is measured: a failure of the other side (at N = 10,000,
        # half an hour later) then keeps it.
        if index % 2 == 0:
            ours = await raypilot_side(context, real, jobs, probes)
            context.log(f"   P7K N={jobs}: {ours}")
            theirs = await kuberay_side(context, real, jobs, probes)
            context.log(f"   P7K N={jobs}: {theirs}")
        else:
            theirs = await kuberay_side(context, real, jobs, probes)
            context.log(f"   P7K N={jobs}: {theirs}")
            ours = await raypilot_side(context, real, jobs, probes)
            context.log(f"   P7K N={jobs}: {ours}")
        figures.extend(point_figures(ours, theirs, first="raypilot" if index % 2 == 0 else "KubeRay"))
    return figures


def mib(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} MiB"


def used(point: SidePoint) -> str:
    own = f"CPU {point.cpu_s / point.window_s:.3f} core"
    if point.server_cpu_s is not None:
        own += (
            f" (worker {point.controller_cpu_s / point.window_s:.3f} + Temporal dev server "
            f"{point.server_cpu_s / point.window_s:.3f})"
        )
    rss = f"RSS {mib(point.controller_rss_mib)}"
    if point.server_rss_mib is not None:
        rss += f" (+ dev server {mib(point.server_rss_mib)}, all its history)"
    return (
        f"{own}, {rss}; dashboard {point.dashboard_rps:.1f} req/s "
        f"({point.dashboard_rps / point.jobs:.3f}/job); "
        f"K8s API {point.api_rps:.2f} req/s; detection {latencies(point.latencies)}"
    )


def top(counted: Counter[str], shown: int = 4) -> str:
    return ", ".join(f"{key} {count}" for key, count in counted.most_common(shown)) or "none"


def point_figures(ours: SidePoint, theirs: SidePoint, first: str) -> list[Figure]:
    jobs = ours.jobs
    median_ours, median_theirs = percentile(ours.latencies, 50), percentile(theirs.latencies, 50)
    ratios = (
        f"raypilot/KubeRay: CPU {ratio(ours.cpu_s, theirs.controller_cpu_s):.2f}, RSS "
        f"{ratio(ours.controller_rss_mib, theirs.controller_rss_mib):.2f} (worker/operator), dashboard "
        f"{ratio(ours.dashboard_rps, theirs.dashboard_rps):.3f}, "
        f"K8s API {ratio(ours.api_rps, theirs.api_rps):.2f}, "
        f"median detection {ratio(median_ours, median_theirs):.2f}"
    )
    notes = [
        f"N={jobs}: {first} first; ramp to all RUNNING raypilot {ours.ramp_s:.0f} s, KubeRay "
        f"{theirs.ramp_s:.0f} s; window {ours.window_s:.0f} s each; {ratios}",
        f"N={jobs}: in the window, kube-apiserver used {ours.apiserver_cpu_s / ours.window_s:.3f} core "
        "beside "
        f"raypilot, {theirs.apiserver_cpu_s / theirs.window_s:.3f} beside KubeRay; the side's Ray head "
        f"{ours.head_cpu_s / ours.window_s:.3f} against {theirs.head_cpu_s / theirs.window_s:.3f}",
        f"N={jobs}: dashboard routes raypilot {top(ours.dashboard)}; KubeRay {top(theirs.dashboard)}",
        f"N={jobs}: K8s API requests raypilot {top(ours.api)}; KubeRay {top(theirs.api)}",
    ]
    return [
        Figure(
            "P7K",
            f"N={jobs} running RayJobs on a shared cluster per side, beside KubeRay v1.5.0 (real stack, "
            f"simulated Ray; {len(ours.latencies)} probe RayJobs for detection)",
            f"raypilot {used(ours)}",
            f"KubeRay {used(theirs)}",
            "raypilot: less CPU and dashboard load than KubeRay, median detection <= 1 s",
            ours.cpu_s < theirs.controller_cpu_s
            and ours.dashboard_rps < theirs.dashboard_rps
            and median_ours <= 1.0,
            notes,
        )
    ]
