"""P3: how soon a RayJob's end is seen, and how many dashboard requests a running job costs.

M HTTPMode RayJobs on one shared RayCluster of simulated Ray on the real stack (bench/jobs_support.py), each
`sleep`ing a different time, run by the real worker (own process, raypilot's ServiceAccount). Latency: from
the Ray job's end_time on the dashboard to the event that told the workflow (the cluster observer's `observed`
signal; with the observer off, the wait activity's ActivityTaskCompleted).
Requests: the reads of each job's path on the dashboard plus the observer's lists of all jobs, per second of
running job (the simulated head's own counters).

Reference, same cluster, same run: a KubeRay-cadence poller (one GET /api/jobs/<id> per job every 3 s,
each job's loop starting at a random phase, as reconciles of many objects do) over M Ray jobs of its own
submitted to the same dashboard with the same sleeps; both reach the dashboard through the API server's
Service proxy.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import httpx
from temporalio.client import WorkflowHandle

from activities.kubernetes.async_api import ssl_context
from bench.arithmetic import KUBERAY_RAYJOB_TICK_S, Figure, event_kind, parse_event_time, percentile
from bench.jobs_support import (
    SHARED_CLUSTER,
    SharedCluster,
    bench_task_queue,
    results_in_order,
    selector_rayjob,
    shared_cluster,
    start_rayjobs,
)
from bench.suite import BenchContext
from models.naming import head_service_name
from wire import names
from wire.observer import OBSERVED_SIGNAL

LATENCY_TARGET_S = 1.0
RATE_TARGET = 0.2


def sleeps(count: int, shortest: float) -> list[float]:
    """Job lengths spread over 3 s so that ends fall at every phase of a 3 s poll."""
    return [shortest + 3.0 * index / max(1, count) for index in range(count)]


async def wait_completed_at(handle: WorkflowHandle[Any, Any]) -> float:
    """When the workflow learnt of its Ray job's end (`end_seen_at` of its history)."""
    history = await handle.fetch_history()
    return end_seen_at(history.to_json_dict()["events"])


def end_seen_at(events: Iterable[Mapping[str, Any]]) -> float:
    """When a RayJob's history says it learnt of its Ray job's end (a Unix time; 0 if it never did): the
    last `observed` signal (the cluster observer) or the last ActivityTaskCompleted of a Ray job wait (the
    polling wait, RAYPILOT_JOB_OBSERVER=false)."""
    waits: set[int] = set()
    completed = 0.0
    for event in events:
        kind = event_kind(event)
        if kind == "activitytaskscheduled":
            attributes = event["activityTaskScheduledEventAttributes"]
            if attributes["activityType"]["name"] == names.WAIT_RAY_JOB:
                waits.add(int(event["eventId"]))
        elif (
            kind == "activitytaskcompleted"
            and int(event["activityTaskCompletedEventAttributes"]["scheduledEventId"]) in waits
        ) or (
            kind == "workflowexecutionsignaled"
            and event["workflowExecutionSignaledEventAttributes"]["signalName"] == OBSERVED_SIGNAL
        ):
            completed = parse_event_time(event["eventTime"]).timestamp()
    return completed


async def kuberay_poller(
    shared: SharedCluster, base: str, submission_id: str, period: float
) -> tuple[float, int]:
    """Poll one job as KubeRay does until it is terminal; returns (time seen terminal, requests made)."""
    requests = 0
    async with dashboard_client(shared) as http:
        await asyncio.sleep(random.uniform(0, period))
        while True:
            answer = (await http.get(f"{base}/api/jobs/{submission_id}")).json()
            requests += 1
            if answer["status"] in ("SUCCEEDED", "FAILED", "STOPPED"):
                return time.time(), requests
            await asyncio.sleep(period)


def dashboard_client(shared: SharedCluster) -> httpx.AsyncClient:
    """An HTTP client with the admin's credentials, which the API server's proxy asks for."""
    return httpx.AsyncClient(timeout=10.0, verify=ssl_context(shared.stack.api_client.configuration))


async def submit_direct(shared: SharedCluster, base: str, submission_id: str, entrypoint: str) -> None:
    async with dashboard_client(shared) as http:
        answer = await http.post(
            f"{base}/api/jobs/", json={"entrypoint": entrypoint, "submission_id": submission_id}
        )
        answer.raise_for_status()


def dashboard_base(shared: SharedCluster) -> str:
    host = shared.stack.api_client.configuration.host.rstrip("/")
    service = head_service_name(SHARED_CLUSTER)
    return f"{host}/api/v1/namespaces/{shared.namespace}/services/{service}:dashboard/proxy"


async def run(context: BenchContext) -> list[Figure]:
    count = 3 if context.smoke else 30
    lengths = sleeps(count, 2.0 if context.smoke else 8.0)
    task_queue = bench_task_queue("p3")
    async with shared_cluster(context) as shared:
        base = dashboard_base(shared)
        async with shared.worker(context, task_queue, context.scratch("p3") / "w.log"):
            tag = uuid.uuid4().hex[:4]
            manifests = [
                selector_rayjob(shared.namespace, f"p3-{tag}-{index}", f"sleep {length:.3f}")
                for index, length in enumerate(lengths)
            ]
            reference_ids = [f"kuberay-{tag}-{index}" for index in range(count)]
            for submission_id, length in zip(reference_ids, lengths, strict=True):
                await submit_direct(shared, base, submission_id, f"sleep {length:.3f}")
            pollers = [
                asyncio.create_task(kuberay_poller(shared, base, submission_id, KUBERAY_RAYJOB_TICK_S))
                for submission_id in reference_ids
            ]
            lists_before = (await shared.head()).paths["GET /api/jobs/"]
            handles = await start_rayjobs(context.client, task_queue, manifests, "P3 start")
            results = await results_in_order(handles, "P3 jobs ended")
            seen = await asyncio.gather(*pollers)
            ours_latency: list[float] = []
            ours_rate_requests, ours_running_s = 0, 0.0
            paths = (await shared.head()).paths
            # The observer's lists serve every job at once: all of them count (the reference polls by id).
            ours_rate_requests += paths["GET /api/jobs/"] - lists_before
            for handle, result in zip(handles, results, strict=True):
                job = await shared.ray_job(result["jobId"])
                ended = job["end_time"] / 1000
                ours_latency.append(await wait_completed_at(handle) - ended)
                ours_rate_requests += paths[f"GET /api/jobs/{result['jobId']}"]
                ours_running_s += ended - job["start_time"] / 1000
            ref_latency, ref_requests, ref_running_s = [], 0, 0.0
            for submission_id, (seen_at, requests) in zip(reference_ids, seen, strict=True):
                job = await shared.ray_job(submission_id)
                ref_latency.append(seen_at - job["end_time"] / 1000)
                ref_requests += requests
                ref_running_s += (job["end_time"] - job["start_time"]) / 1000
    ours_rate = ours_rate_requests / ours_running_s
    ref_rate = ref_requests / ref_running_s
    median = percentile(ours_latency, 50)
    return [
        Figure(
            "P3",
            f"job-end detection, {count} jobs",
            f"latency median {median:.2f} s, p90 {percentile(ours_latency, 90):.2f} s, max "
            f"{max(ours_latency):.2f} s; {ours_rate:.3f} dashboard req/s per running job",
            f"KubeRay-cadence poller: median {percentile(ref_latency, 50):.2f} s, "
            f"max {max(ref_latency):.2f} s; {ref_rate:.3f} req/s/job",
            "median <= 1 s at <= 0.2 req/s/job",
            median <= LATENCY_TARGET_S and ours_rate <= RATE_TARGET,
        )
    ]
