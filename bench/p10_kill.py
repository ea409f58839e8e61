"""P10's kill: two workers hold N RayJobs whose Ray jobs end after the kill; kill -9 of the worker holding the
Ray job observer's activity; what the other worker does after (see bench/p10_workers.py)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bench.jobs_support import SharedCluster, bench_task_queue, held_rayjobs, results_in_order, sample_process
from bench.p7_scale import settled
from bench.p10_support import (
    KILL_SPREAD_S,
    LISTS,
    POSTS,
    RECOVERY_TARGET_S,
    end_and_close,
    histories,
    job_details,
    kill_sleeps,
    spread_and_observed,
)
from bench.suite import BenchContext
from bench.worker_group import WorkerGroup, observer_holds, observer_runs, worker_group
from wire.observer import OBSERVER_WORKFLOW

# How long to wait for the observers to answer again before giving up (past the observer activity's
# heartbeat timeout, which is what finds a lost worker when no worker starts).
RECOVERY_WAIT_S = 480.0
PROBE_S = 0.5


@dataclass(frozen=True)
class KillPoint:
    jobs: int
    ramp_s: float
    killed_holder: bool  # the killed worker held the Ray job observer's activity
    lists_resumed_s: float | None  # kill -> the first list of the cluster after it
    observer_moved_s: float | None  # kill -> the observer's activity seen on the other worker
    ended_after_kill: int
    ended: int  # workflows that returned
    detection: list[float]  # Ray job end_time -> `observed` signal, jobs that ended after the kill
    closed: list[float]  # Ray job end_time -> workflow closed, same jobs
    posts: int  # submissions the dashboard received
    dashboard_jobs: int  # Ray jobs the dashboard holds that it did not before
    survivor_jobs: int  # jobs of the run with a workflow task on the survivor
    survivor_rss_mib: float
    observed_per_job: list[int]  # `observed` signals each RayJob received over its life
    observer_runs: int


async def recovery(
    context: BenchContext, shared: SharedCluster, group: WorkerGroup, task_queue: str, killed_at: float
) -> tuple[float | None, float | None]:
    """After the kill: when the cluster is listed again (the dead worker can list no more: any list after a
    second is another activity's) and when the Ray job observer's activity is seen on a live worker."""
    await asyncio.sleep(1.0)  # a list in flight at the kill is answered within it
    lists_at_kill = (await shared.head()).paths[LISTS]
    survivors = {group.identities[index] for index in group.alive()}
    lists_resumed: float | None = None
    moved: float | None = None
    while time.monotonic() - killed_at < RECOVERY_WAIT_S and (lists_resumed is None or moved is None):
        if lists_resumed is None and (await shared.head()).paths[LISTS] > lists_at_kill:
            lists_resumed = time.monotonic() - killed_at
        if moved is None:
            holds = await observer_holds(context.client, task_queue)
            if any(hold.workflow_type == OBSERVER_WORKFLOW and hold.identity in survivors for hold in holds):
                moved = time.monotonic() - killed_at
        await asyncio.sleep(PROBE_S)
    return lists_resumed, moved


async def measure_kill(
    context: BenchContext, shared: SharedCluster, jobs: int, ramp_s: float, settle_s: float
) -> KillPoint:
    task_queue = bench_task_queue("p10-kill")
    async with worker_group(context, shared, task_queue, 2, "kill") as group:
        lengths = kill_sleeps(jobs, ramp_s, settle_s, 5.0 if context.smoke else KILL_SPREAD_S)
        entrypoints = [f"sleep {length:.1f}" for length in lengths]
        head = await shared.head()
        posts_before, jobs_before = head.routes[POSTS], sum(head.job_states.values())
        async with held_rayjobs(context, shared, task_queue, "p10k", entrypoints, "P10 kill") as running:
            handles = running.handles
            await settled(shared, group, 2.0 if context.smoke else 10.0, within=120 + jobs * 0.1)
            holds = await observer_holds(context.client, task_queue)
            holder = next(
                (group.index_of(hold.identity) for hold in holds if hold.workflow_type == OBSERVER_WORKFLOW),
                None,
            )
            victim = holder if holder is not None else 0
            killed_wall = time.time()
            killed_at = await group.kill(victim)
            context.log(
                f"   P10 kill: worker {victim} killed ({'held' if holder is not None else 'no'} observer)"
            )
            lists_resumed, moved = await recovery(context, shared, group, task_queue, killed_at)
            context.log(f"   P10 kill: lists again after {lists_resumed} s, observer moved after {moved} s")
            within = max(lengths) + RECOVERY_WAIT_S + jobs * 0.2
            results = await asyncio.wait_for(results_in_order(handles, "P10 kill jobs ended"), within)
            details = await job_details(shared)
            events_each = await histories(handles)
            head = await shared.head()
            runs = await observer_runs(context.client, task_queue)
            [survivor] = group.alive()
            survivor_rss = await asyncio.to_thread(_rss_mib, group.pids[survivor])
    detection: list[float] = []
    closed: list[float] = []
    after_kill = 0
    for result, events in zip(results, events_each, strict=True):
        ended = details[result["jobId"]]["end_time"] / 1000
        if ended <= killed_wall:
            continue
        after_kill += 1
        seen, close = end_and_close(events)
        detection.append(seen - ended)
        closed.append(close - ended)
    spread, observed = spread_and_observed(events_each, group.identities)
    return KillPoint(
        jobs=jobs,
        ramp_s=running.ramp_s,
        killed_holder=holder is not None,
        lists_resumed_s=lists_resumed,
        observer_moved_s=moved,
        ended_after_kill=after_kill,
        ended=sum(1 for result in results if result.get("jobDeploymentStatus") == "Complete"),
        detection=detection,
        closed=closed,
        posts=head.routes[POSTS] - posts_before,
        dashboard_jobs=sum(head.job_states.values()) - jobs_before,
        survivor_jobs=spread[survivor],
        survivor_rss_mib=survivor_rss,
        observed_per_job=observed,
        observer_runs=runs,
    )


def _rss_mib(pid: int) -> float:
    return sample_process(pid).rss_bytes / 2**20


def recovered(point: KillPoint) -> bool:
    """Within target: the observers answered again within 30 s of the kill, every job ended Complete with
    its end seen and its workflow closed within 30 s, and each Ray job submitted once."""
    answered = point.lists_resumed_s is not None and point.lists_resumed_s <= RECOVERY_TARGET_S
    slowest = max([*point.detection, *point.closed], default=0.0)
    return (
        answered
        and point.ended == point.jobs
        and slowest <= RECOVERY_TARGET_S
        and point.posts == point.jobs
        and point.dashboard_jobs == point.jobs
    )
