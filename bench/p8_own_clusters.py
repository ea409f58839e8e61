"""P8: N RayJobs end to end, each with its own RayCluster, raypilot beside KubeRay's operator v1.5.0 itself,
in one run on one real stack (simulated Ray; bench/realkube_stack.py); and what one such lifecycle asks of the
Kubernetes API server on each side.

At each N (`--clusters`, after a lone lifecycle, N = 1), each side in turn gets a namespace of its own and N
copies of the same HTTPMode RayJob (examples/rayjob-httpmode.yaml, `echo hi`, `shutdownAfterJobFinishes`),
all at once: KubeRay's as `ray.io/v1` RayJobs, raypilot's as workflows of its worker (`worker.py` in a process
of its own, deploy/'s RBAC). On both sides KubeRay's RayCluster controller makes each cluster's head Pod
and the node agent runs it as a local process of simulated Ray, so each cluster costs the machine a process
while it lives. A lifecycle ends when its RayCluster is gone (a watch sees it DELETED): the figures are
the time from the first create to the last cluster gone, and N over it. Requests: every request the API
server received in the side's namespace from the first create to the last cluster gone (its audit log), by
user (the side's controller; on raypilot's side KubeRay's RayCluster controller too, which makes the Pods
of raypilot's clusters), verb and resource, per lifecycle; KubeRay's informers' cluster-wide lists and
watches serve every RayJob at once and are left out (noted apart). The sides alternate which goes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.arithmetic import Figure, ratio
from bench.jobs_support import bench_task_queue, worker_process
from bench.kuberay_jobs import create_rayjobs, delete_rayjobs, listed
from bench.progress import Progress
from bench.realkube_counts import KUBERAY_USER, WORKER_USER, AuditMark, audit_mark, audited_since
from bench.realkube_stack import SharedRealStack, shared_real_stack
from bench.suite import BenchContext
from tests.integration.rayjob_support import example, ray_io_events
from tests.integration.stack import Stack

SETTLE_AFTER_S = 1.0  # after the last cluster is gone, for the last requests to reach the audit log
MEMORY_SAMPLE_S = 1.0


def lifecycle_rayjob(namespace: str, name: str) -> dict[str, Any]:
    return example(
        "rayjob-httpmode",
        namespace,
        rename=name,
        entrypoint="echo hi",
        shutdownAfterJobFinishes=True,
    )


@dataclass(frozen=True)
class Batch:
    """One side's N lifecycles: when each ended, the most clusters alive at once, the least memory left."""

    side: str
    jobs: int
    took_s: float  # first create -> last RayCluster gone
    jobs_done_s: float  # first create -> last job seen ended by its side (workflow result, RayJob status)
    most_clusters: int
    least_available_mib: float
    succeeded: int
    requests: dict[str, Counter[str]]  # user -> "<verb> <resource>" -> count, in the side's namespace

    @property
    def rate(self) -> float:
        return self.jobs / self.took_s

    def per_lifecycle(self) -> float:
        return sum(sum(counted.values()) for counted in self.requests.values()) / self.jobs


def available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


class ClusterWatch:
    """A thread that watches a namespace's RayClusters: the most alive at once, and when the `count`-th was
    gone; and the least memory the machine had available meanwhile."""

    def __init__(self, stack: Stack, namespace: str, count: int, within: float) -> None:
        self.count, self.alive, self.most, self.gone = count, set[str](), 0, 0
        self.least_mib = available_mib()
        self.last_gone_at = 0.0
        self.thread = threading.Thread(target=self._watch, args=(stack, namespace, within), daemon=True)
        self.thread.start()  # before the first create: a cluster made and gone before it would be missed

    def _watch(self, stack: Stack, namespace: str, within: float) -> None:
        for event in ray_io_events(stack, namespace, "rayclusters", within):
            name = event["object"]["metadata"]["name"]
            if event["type"] == "DELETED":
                self.alive.discard(name)
                self.gone += 1
                if self.gone >= self.count:
                    self.last_gone_at = time.monotonic()
                    return
            else:
                self.alive.add(name)
                self.most = max(self.most, len(self.alive))

    async def ended(self, bar: Progress) -> float:
        """Waits for the `count`-th cluster gone, sampling the machine's memory; returns when (monotonic)."""
        while self.thread.is_alive():
            self.least_mib = min(self.least_mib, available_mib())
            bar.set(self.gone)
            await asyncio.sleep(MEMORY_SAMPLE_S)
        bar.set(self.gone)
        if self.gone < self.count:
            raise TimeoutError(f"{self.gone} of {self.count} RayClusters were gone in time")
        return self.last_gone_at


def within_s(jobs: int) -> float:
    return 300 + jobs * 6.0


@contextlib.asynccontextmanager
async def namespace_of_its_own(context: BenchContext, real: SharedRealStack) -> AsyncIterator[Stack]:
    async with real.admin_stack(context.client, "") as stack:
        stack.namespace()
        yield stack


def requests_in(
    real: SharedRealStack, namespace: str, users: tuple[str, ...], mark: AuditMark, until: float
) -> dict[str, Counter[str]]:
    log = real.plane.audit_log
    return {user: audited_since(log, user, namespace, mark, until=until) for user in users}


async def raypilot_batch(context: BenchContext, real: SharedRealStack, jobs: int) -> Batch:
    queue = bench_task_queue("p8")
    log = context.scratch("p8") / f"worker-{jobs}.log"
    async with (
        worker_process(context.address, queue, real.worker_kubeconfig, log),
        namespace_of_its_own(context, real) as admin,
    ):
        stack = Stack(context.client, queue, admin.api_client)
        namespace = admin.namespaces[0]
        manifests = [lifecycle_rayjob(namespace, f"p8-{index}") for index in range(jobs)]
        watch = ClusterWatch(stack, namespace, jobs, within_s(jobs))
        mark, started = audit_mark(real.plane.audit_log), time.monotonic()
        wall_started = time.time()
        handles = await asyncio.gather(*(stack.start(manifest) for manifest in manifests))
        done_at: list[float] = []

        async def result(handle: Any) -> dict[str, Any]:
            found: dict[str, Any] = await handle.result()
            done_at.append(time.monotonic())
            return found

        with Progress(f"P8 raypilot N={jobs}", jobs) as bar:
            results, last_gone = await asyncio.gather(
                asyncio.gather(*(result(handle) for handle in handles)), watch.ended(bar)
            )
        await asyncio.sleep(SETTLE_AFTER_S)
        until = wall_started + (last_gone - started) + SETTLE_AFTER_S
        requests = requests_in(real, namespace, (WORKER_USER, KUBERAY_USER), mark, until)
    succeeded = sum(1 for found in results if found.get("jobStatus") == "SUCCEEDED")
    return Batch(
        "raypilot",
        jobs,
        last_gone - started,
        max(done_at) - started,
        watch.most,
        watch.least_mib,
        succeeded,
        requests,
    )


def watch_rayjobs_complete(
    stack: Stack, namespace: str, count: int, within: float, seen: list[float]
) -> None:
    """Appends the moment a watch first sees each RayJob's status say Complete, until `count` have."""
    done: set[str] = set()
    for event in ray_io_events(stack, namespace, "rayjobs", within):
        rayjob = event["object"]
        if (rayjob.get("status") or {}).get("jobDeploymentStatus") == "Complete":
            name = rayjob["metadata"]["name"]
            if name not in done:
                done.add(name)
                seen.append(time.monotonic())
                if len(done) >= count:
                    return


async def kuberay_batch(context: BenchContext, real: SharedRealStack, jobs: int) -> Batch:
    async with namespace_of_its_own(context, real) as stack:
        namespace = stack.namespaces[0]
        manifests = [lifecycle_rayjob(namespace, f"p8-{index}") for index in range(jobs)]
        watch = ClusterWatch(stack, namespace, jobs, within_s(jobs))
        complete: list[float] = []
        completing = threading.Thread(
            target=watch_rayjobs_complete,
            args=(stack, namespace, jobs, within_s(jobs), complete),
            daemon=True,
        )
        completing.start()
        mark, started = audit_mark(real.plane.audit_log), time.monotonic()
        wall_started = time.time()
        with Progress(f"P8 KubeRay N={jobs}", jobs) as bar:
            _, last_gone = await asyncio.gather(
                create_rayjobs(stack, manifests, f"P8 KubeRay create N={jobs}"), watch.ended(bar)
            )
        await asyncio.to_thread(completing.join, 60)
        await asyncio.sleep(SETTLE_AFTER_S)
        until = wall_started + (last_gone - started) + SETTLE_AFTER_S
        requests = requests_in(real, namespace, (KUBERAY_USER,), mark, until)
        items = await asyncio.to_thread(listed, stack, namespace, "rayjobs")
        succeeded = sum(1 for item in items if (item.get("status") or {}).get("jobStatus") == "SUCCEEDED")
        await delete_rayjobs(stack, namespace, within=120)
    return Batch(
        "KubeRay",
        jobs,
        last_gone - started,
        (max(complete) if complete else last_gone) - started,
        watch.most,
        watch.least_mib,
        succeeded,
        requests,
    )


def by_verb(requests: dict[str, Counter[str]], jobs: int) -> str:
    merged: Counter[str] = Counter()
    for counted in requests.values():
        merged.update(counted)
    return ", ".join(f"{key} {count / jobs:g}" for key, count in sorted(merged.items()))


def shown_requests(batch: Batch) -> str:
    users = {WORKER_USER: "worker", KUBERAY_USER: "KubeRay's operator"}
    parts = [
        f"{users[user]} {sum(counted.values()) / batch.jobs:g}" for user, counted in batch.requests.items()
    ]
    return f"{batch.per_lifecycle():g} ({' + '.join(parts)}): {by_verb(batch.requests, batch.jobs)}"


def lifecycle_figure(ours: Batch, theirs: Batch) -> Figure:
    return Figure(
        "P8",
        "Kubernetes API requests of one RayJob lifecycle with its own RayCluster (HTTPMode, "
        "shutdownAfterJobFinishes; create to cluster gone), alone in its namespace (the API server's audit "
        "log, by verb and resource; informers' cluster-wide lists and watches left out)",
        f"raypilot {shown_requests(ours)}",
        f"KubeRay {shown_requests(theirs)}",
        "report",
        None,
    )


def batch_figure(ours: Batch, theirs: Batch, first: str) -> Figure:
    jobs = ours.jobs

    def shown(batch: Batch) -> str:
        return (
            f"{batch.rate:.2f} lifecycles/s, last cluster gone at {batch.took_s:.0f} s (last job ended "
            f"{batch.jobs_done_s:.0f} s), {batch.succeeded}/{jobs} SUCCEEDED; API requests per lifecycle "
            f"{batch.per_lifecycle():.1f}"
        )

    return Figure(
        "P8",
        f"N={jobs} RayJobs end to end, each with its own RayCluster, all at once, beside KubeRay v1.5.0 "
        "(real stack, simulated Ray)",
        f"raypilot {shown(ours)}",
        f"KubeRay {shown(theirs)}; raypilot/KubeRay rate {ratio(ours.rate, theirs.rate):.2f}",
        "raypilot's rate >= KubeRay's, every job SUCCEEDED",
        ours.rate >= theirs.rate and ours.succeeded == jobs,
        [
            f"N={jobs}: {first} first; clusters alive at once at most: raypilot {ours.most_clusters}, "
            f"KubeRay {theirs.most_clusters}; least memory available: {ours.least_available_mib:.0f} MiB, "
            f"{theirs.least_available_mib:.0f} MiB",
            f"N={jobs}: requests per lifecycle by verb and resource: raypilot "
            f"{by_verb(ours.requests, jobs)}; KubeRay {by_verb(theirs.requests, jobs)}",
        ],
    )


async def run(context: BenchContext) -> list[Figure]:
    sizes = [] if context.smoke else list(context.clusters)
    real = await shared_real_stack(context)
    # The lone lifecycle first: each side's requests for one RayJob in a namespace that holds nothing else.
    lone_ours = await raypilot_batch(context, real, 1)
    lone_theirs = await kuberay_batch(context, real, 1)
    figures = [lifecycle_figure(lone_ours, lone_theirs)]
    for index, jobs in enumerate(sizes):
        if index % 2 == 0:
            theirs = await kuberay_batch(context, real, jobs)
            ours = await raypilot_batch(context, real, jobs)
        else:
            ours = await raypilot_batch(context, real, jobs)
            theirs = await kuberay_batch(context, real, jobs)
        context.log(f"   P8 N={jobs}: {ours}\n   {theirs}")
        figures.append(batch_figure(ours, theirs, first="KubeRay" if index % 2 == 0 else "raypilot"))
    return figures
