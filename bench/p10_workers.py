"""P10: the same N running RayJobs held by 1, 2 and 4 worker processes on one task queue, then a kill -9 of
one of two workers while they hold them.

P7's stack and jobs (bench/jobs_support.py): one shared RayCluster of simulated Ray on the real stack, N
HTTPMode RayJobs (clusterSelector) started through the dev server, each worker `worker.py` in its own process
(bench/worker_group.py). At each worker count, once every Ray job runs and the observer and the workers
settled (P7's `settled`), a window measures each worker's RSS and CPU share; then what each worker ran (its
own SDK metrics: workflow tasks; the histories of a sample of the jobs: which workers ran their tasks; the
observers' pending activities: which worker holds each), and P3's job-end detection of 30 more RayJobs of
8-11 s that join the held ones. Reference: the same figures with one worker, same run.

The kill: two workers, N RayJobs whose Ray jobs end after the kill (their `sleep` is the ramp of the 2-worker
point, with margin); once all run and settled, kill -9 of the worker holding the Ray job observer's activity.
Measured: how long until the cluster is listed again (its head's own counter of `GET /api/jobs/`) and until
the observer's activity runs on the other worker; every RayJob's end seen (its `observed` signal) and its
workflow closed, each time from the Ray job's end_time; the submissions the dashboard received (a job run
twice would be a second POST).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bench.arithmetic import Figure, percentile, ratio
from bench.jobs_support import SharedCluster, bench_task_queue, held_rayjobs, held_window, shared_cluster
from bench.p7_scale import settled
from bench.p10_kill import KillPoint, measure_kill, recovered
from bench.p10_support import (
    DETECTION_TARGET_S,
    RECOVERY_TARGET_S,
    SPREAD_SAMPLE,
    WORKER_COUNTS,
    clear_dashboard,
    detection,
    histories,
    jobs_of_run,
    spread_and_observed,
)
from bench.suite import BenchContext
from bench.worker_group import observer_holds, observer_runs, worker_group


@dataclass(frozen=True)
class WorkerShare:
    rss_mib: float
    cpu_share: float  # in the window
    cpu_s: float  # since the worker started
    workflow_tasks: int | None
    jobs_sampled: int  # jobs of the sample with a workflow task run by this worker
    observers_held: int


@dataclass(frozen=True)
class WorkersPoint:
    workers: int
    jobs: int
    ramp_s: float
    settle_s: float
    shares: list[WorkerShare]
    detection: list[float]
    observed_per_job: list[int]  # `observed` signals each job of the sample received while held
    observer_runs: int  # runs of the Ray job observer (one more per continue-as-new)


async def measure_workers(
    context: BenchContext, shared: SharedCluster, workers: int, jobs: int, window_s: float, settle_s: float
) -> WorkersPoint:
    task_queue = bench_task_queue(f"p10-{workers}")
    label = f"P10 W={workers}"
    async with worker_group(context, shared, task_queue, workers, f"w{workers}") as group:
        entrypoints = ["sleep 100000"] * jobs
        try:
            async with held_rayjobs(context, shared, task_queue, "p10", entrypoints, label) as running:
                settle = await settled(shared, group, settle_s, within=120 + jobs * 0.1)
                windows = await asyncio.gather(*(held_window(pid, window_s) for pid in group.pids))
                cpu_each, tasks_each = group.cpu_seconds_each(), await group.tasks_each()
                holds = await observer_holds(context.client, task_queue)
                sampled_histories = await histories(running.handles[:SPREAD_SAMPLE])
                spread, observed = spread_and_observed(sampled_histories, group.identities)
                runs = await observer_runs(context.client, task_queue)
                latencies = await detection(context, shared, task_queue, label)
        finally:
            await clear_dashboard(shared)
    shares = [
        WorkerShare(
            window.rss_bytes / 2**20,
            window.cpu_share,
            cpu or 0.0,
            tasks,
            sampled,
            sum(1 for hold in holds if group.index_of(hold.identity) == index),
        )
        for index, (window, cpu, tasks, sampled) in enumerate(
            zip(windows, cpu_each, tasks_each, spread, strict=True)
        )
    ]
    return WorkersPoint(workers, jobs, running.ramp_s, settle, shares, latencies, observed, runs)


def _shares_text(point: WorkersPoint) -> str:
    return "; ".join(
        f"w{index}: RSS {share.rss_mib:.0f} MiB, CPU {share.cpu_share:.2f} core ({share.cpu_s:.0f} s), "
        f"{share.workflow_tasks} wf tasks, {share.jobs_sampled} jobs, {share.observers_held} observer(s)"
        for index, share in enumerate(point.shares)
    )


def workers_figures(points: list[WorkersPoint]) -> list[Figure]:
    """One row per worker count; the one-worker point is each row's reference."""
    [reference] = [point for point in points if point.workers == 1] or [points[0]]
    ref_cpu = sum(share.cpu_s for share in reference.shares)
    ref_median = percentile(reference.detection, 50)
    ref_rss = sum(share.rss_mib for share in reference.shares)
    figures: list[Figure] = []
    for point in points:
        cpu = sum(share.cpu_s for share in point.shares)
        rss = sum(share.rss_mib for share in point.shares)
        median = percentile(point.detection, 50)
        sampled = min(point.jobs, SPREAD_SAMPLE)
        figures.append(
            Figure(
                "P10",
                f"N={point.jobs} running RayJobs, {point.workers} worker(s)",
                f"{_shares_text(point)}; total RSS {rss:.0f} MiB, CPU {cpu:.0f} s; detection median "
                f"{median:.2f} s, p90 {percentile(point.detection, 90):.2f} s, "
                f"max {max(point.detection):.2f} s",
                f"1 worker: RSS {ref_rss:.0f} MiB, CPU {ref_cpu:.0f} s "
                f"(ours/1 worker {ratio(cpu, ref_cpu):.2f}), detection median {ref_median:.2f} s",
                "every job held, detection median <= 1 s",
                median <= DETECTION_TARGET_S,
                [
                    f"W={point.workers}: ramp to all RUNNING {point.ramp_s:.0f} s, settled "
                    f"{point.settle_s:.0f} s later; jobs = of a sample of {sampled}, those with a workflow "
                    "task on that worker; CPU s since the workers started (ramp included); `observed` "
                    f"signals per held job (sample) median {percentile(point.observed_per_job, 50):.0f}, "
                    f"max {max(point.observed_per_job)}; Ray job observer runs {point.observer_runs}"
                ],
            )
        )
    return figures


def kill_figure(point: KillPoint, reference: WorkersPoint | None) -> Figure:
    def seconds(value: float | None) -> str:
        return "never" if value is None else f"{value:.1f} s"

    detected = point.detection or [0.0]
    closed = point.closed or [0.0]
    reference_text = (
        f"2 workers, nobody killed: detection median {percentile(reference.detection, 50):.2f} s, "
        f"max {max(reference.detection):.2f} s"
        if reference is not None
        else "none"
    )
    return Figure(
        "P10",
        f"kill -9 of 1 of 2 workers holding N={point.jobs} RayJobs",
        f"killed the {'observer holder' if point.killed_holder else 'first worker'}; lists again after "
        f"{seconds(point.lists_resumed_s)}, observer activity on the other worker after "
        f"{seconds(point.observer_moved_s)}; {point.ended}/{point.jobs} Complete "
        f"({point.ended_after_kill} ended after the kill: end seen median {percentile(detected, 50):.2f} s, "
        f"max {max(detected):.1f} s; workflow closed max {max(closed):.1f} s); submissions {point.posts}, "
        f"Ray jobs {point.dashboard_jobs}; survivor ran {point.survivor_jobs} jobs, RSS "
        f"{point.survivor_rss_mib:.0f} MiB",
        reference_text,
        f"observers answer within {RECOVERY_TARGET_S:.0f} s, every end seen and closed within it, "
        "nothing run twice",
        recovered(point),
        [
            f"kill: ramp {point.ramp_s:.0f} s; `observed` signals per RayJob median "
            f"{percentile(point.observed_per_job, 50):.0f}, max {max(point.observed_per_job)}; Ray job "
            f"observer runs {point.observer_runs}"
        ],
    )


async def run(context: BenchContext) -> list[Figure]:
    jobs = jobs_of_run(context.scale, context.smoke)
    counts = (1, 2) if context.smoke else WORKER_COUNTS
    window, settle = (2.0, 2.0) if context.smoke else (20.0, 10.0)
    points: list[WorkersPoint] = []
    async with shared_cluster(context) as shared:
        for workers in counts:
            point = await measure_workers(context, shared, workers, jobs, window, settle)
            # The figures carry the numbers; the log says only that a point is done (its lists would be
            # thousands of values at N = 2,000).
            context.log(f"   P10 W={workers}: ramp {point.ramp_s:.0f} s, settled {point.settle_s:.0f} s on")
            points.append(point)
        two = next((point for point in points if point.workers == 2), points[-1])
        kill = await measure_kill(context, shared, jobs, two.ramp_s, two.settle_s)
        context.log(f"   P10 kill: {kill.ended} of {kill.jobs} ended, {kill.ended_after_kill} after the kill")
    return [*workers_figures(points), kill_figure(kill, two)]
