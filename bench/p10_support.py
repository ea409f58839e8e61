"""What P10's points and its kill share (bench/p10_workers.py): its sizes, the kill phase's job lengths, a
RayJob's end seen and closed from its history, the shared dashboard's jobs, and P3's detection of jobs that
join the held ones."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio.client import WorkflowHandle

from bench.arithmetic import event_kind, parse_event_time
from bench.jobs_support import (
    SHARED_CLUSTER,
    SharedCluster,
    results_in_order,
    selector_rayjob,
    start_rayjobs,
    wait_for_states,
)
from bench.p3_detection import end_seen_at, sleeps
from bench.suite import DEFAULT_SCALE, BenchContext
from bench.worker_group import jobs_per_worker, signals_named, task_identities
from models.naming import head_service_name
from tests.integration.rayjob_support import dashboard
from wire.observer import OBSERVED_SIGNAL

DEFAULT_JOBS = 2_000
WORKER_COUNTS = (1, 2, 4)
DETECTION_JOBS = 30
DETECTION_TARGET_S = 1.0
# How long after a kill the observers must answer again, and a job's end be seen and its workflow closed.
RECOVERY_TARGET_S = 30.0
SPREAD_SAMPLE = 200  # jobs whose histories say which workers ran them
KILL_SPREAD_S = 60.0  # the kill phase's Ray jobs end over this long
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
LISTS = "GET /api/jobs/"
POSTS = "POST /api/jobs/"


def jobs_of_run(scale: Sequence[int], smoke: bool) -> int:
    """P10's N: the largest of an explicit `--scale`, 2,000 when the suite runs with its default scale."""
    if smoke:
        return 3
    return DEFAULT_JOBS if tuple(scale) == DEFAULT_SCALE else max(scale)


def kill_sleeps(count: int, ramp_s: float, settle_s: float, spread_s: float) -> list[float]:
    """The kill phase's entrypoint lengths: each Ray job starts within the ramp (measured at the 2-worker
    point), so a sleep of 1.5 x (ramp + settle) + 60 s ends after every job ran, the workers settled and
    one was killed; the ends spread over `spread_s` so that they fall before, during and after recovery."""
    base = 1.5 * (ramp_s + settle_s) + 60.0
    return [base + spread_s * index / max(1, count) for index in range(count)]


def spread_and_observed(
    events_each: Sequence[Sequence[Mapping[str, Any]]], identities: Sequence[str]
) -> tuple[list[int], list[int]]:
    """What RayJobs' histories say: for each worker (by identity, in order) how many of the jobs had a
    workflow task run by it (`jobs_per_worker`), and how many `observed` signals each job received."""
    spread = jobs_per_worker([task_identities(events) for events in events_each], identities)
    return spread, [signals_named(events, OBSERVED_SIGNAL) for events in events_each]


def end_and_close(events: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """A RayJob's history: when it learnt its Ray job ended (`end_seen_at`) and when its workflow closed
    (the last event's time), both Unix times (0: not there)."""
    closed = 0.0
    if events and event_kind(events[-1]).startswith("workflowexecution"):
        closed = parse_event_time(events[-1]["eventTime"]).timestamp()
    return end_seen_at(events), closed


async def job_details(shared: SharedCluster) -> dict[str, dict[str, Any]]:
    """Every Ray job of the shared dashboard by submission id (one list)."""
    service = head_service_name(SHARED_CLUSTER)
    answer = await dashboard(shared.stack, shared.namespace, service, "GET", "/api/jobs/")
    answer.raise_for_status()
    return {job["submission_id"]: job for job in answer.json()}


async def histories(handles: Sequence[WorkflowHandle[Any, Any]]) -> list[list[dict[str, Any]]]:
    gate = asyncio.Semaphore(16)

    async def one(handle: WorkflowHandle[Any, Any]) -> list[dict[str, Any]]:
        async with gate:
            events: list[dict[str, Any]] = (await handle.fetch_history()).to_json_dict()["events"]
            return events

    return list(await asyncio.gather(*(one(handle) for handle in handles)))


async def detection(context: BenchContext, shared: SharedCluster, task_queue: str, label: str) -> list[float]:
    """P3's latency of 30 RayJobs of 8-11 s that join the held ones: end_time -> the `observed` signal."""
    count = 3 if context.smoke else DETECTION_JOBS
    tag = uuid.uuid4().hex[:4]
    manifests = [
        selector_rayjob(shared.namespace, f"p10d-{tag}-{index}", f"sleep {length:.3f}")
        for index, length in enumerate(sleeps(count, 2.0 if context.smoke else 8.0))
    ]
    handles = await start_rayjobs(context.client, task_queue, manifests, f"{label} detection start")
    results = await results_in_order(handles, f"{label} detection jobs ended")
    details = await job_details(shared)
    seen = [end_seen_at(events) for events in await histories(handles)]
    return [
        at - details[result["jobId"]]["end_time"] / 1000 for at, result in zip(seen, results, strict=True)
    ]


async def clear_dashboard(shared: SharedCluster) -> None:
    """Stops every Ray job of the shared cluster still going and deletes them all (a point's held jobs
    outlive their terminated workflows): each point's observer then lists only its own jobs."""
    service = head_service_name(SHARED_CLUSTER)
    gate = asyncio.Semaphore(32)

    async def one(method: str, path: str) -> None:
        async with gate:
            await dashboard(shared.stack, shared.namespace, service, method, path)

    going = [job for job, details in (await job_details(shared)).items() if details["status"] not in TERMINAL]
    stopped_before = (await shared.ray_job_states())["STOPPED"]
    await asyncio.gather(*(one("POST", f"/api/jobs/{job}/stop") for job in going))
    await wait_for_states(
        shared, "STOPPED", stopped_before + len(going), within=120, label="P10 held Ray jobs stopped"
    )
    await asyncio.gather(*(one("DELETE", f"/api/jobs/{job}") for job in await job_details(shared)))
