"""P3K: how soon a RayJob's end is seen, and how many dashboard requests a running job costs, raypilot beside
KubeRay's operator v1.5.0 itself, in one run on one real stack (simulated Ray; bench/realkube_stack.py).

Each side has a RayCluster of its own (the same manifest, in a namespace of its own) and N HTTPMode RayJobs
with a clusterSelector on it, `sleep`ing 8-11 s (ends at every phase of a 3 s poll), all running at once:
KubeRay's as `ray.io/v1` RayJobs, raypilot's as workflows of its worker (deploy/'s RBAC).
Detection: from the Ray job's end_time (its dashboard) to the moment each side knew: for raypilot the
`observed` signal in the workflow's history (as P3); for KubeRay the moment a watch saw its RayJob's status
say the job ended (KubeRay keeps no other trace; the status write follows what it saw by one request).
Requests: the GETs of each cluster's dashboard on its job routes over the run (the simulated dashboard's
`ray_dashboard_api_requests_count` counter, read through the API server), per second of running job.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from kubernetes import config

from bench.arithmetic import Figure, percentile
from bench.jobs_support import SHARED_CLUSTER, results_in_order, selector_rayjob, start_rayjobs
from bench.p3_detection import LATENCY_TARGET_S, RATE_TARGET, sleeps, wait_completed_at
from bench.realkube_stack import shared_real_stack
from bench.suite import BenchContext
from sandbox.testing import raycluster_manifest
from tests.integration.rayjob_support import (
    create_raycluster,
    dashboard,
    head_pod_name,
    job_reads,
    ray_io_events,
)
from tests.integration.stack import Stack, kubeconfig_worker

TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


async def ray_job(stack: Stack, namespace: str, submission_id: str) -> dict[str, Any]:
    answer = await dashboard(
        stack, namespace, f"{SHARED_CLUSTER}-head-svc", "GET", f"/api/jobs/{submission_id}"
    )
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found


def watch_kuberay_ends(stack: Stack, namespace: str, count: int, seen: dict[str, float]) -> None:
    """Records when a watch first sees each RayJob's status with an ended job, until `count` have."""
    for event in ray_io_events(stack, namespace, "rayjobs", within=600):
        rayjob = event["object"]
        if (rayjob.get("status") or {}).get("jobStatus") in TERMINAL:
            seen.setdefault(rayjob["metadata"]["name"], time.time())
            if len(seen) >= count:
                return


def latencies(values: list[float]) -> str:
    return (
        f"median {percentile(values, 50):.2f} s, p90 {percentile(values, 90):.2f} s, max {max(values):.2f} s"
    )


async def run(context: BenchContext) -> list[Figure]:
    count = 3 if context.smoke else 30
    lengths = sleeps(count, 2.0 if context.smoke else 8.0)
    shared = await shared_real_stack(context)
    api_client = config.new_client_from_config(config_file=str(shared.plane.kubeconfig))
    try:
        async with kubeconfig_worker(context.client, shared.installed.worker) as queue:
            stack = Stack(context.client, queue, api_client)
            ours, theirs = stack.namespace(), stack.namespace()
            for namespace in (ours, theirs):
                await create_raycluster(stack, raycluster_manifest(SHARED_CLUSTER, namespace, workers=0))
            pods = {
                namespace: head_pod_name(stack, namespace, SHARED_CLUSTER) for namespace in (ours, theirs)
            }
            before = {ns: (await job_reads(stack, ns, pod)).total() for ns, pod in pods.items()}
            kuberay_seen: dict[str, float] = {}
            watching = threading.Thread(
                target=watch_kuberay_ends, args=(stack, theirs, count, kuberay_seen), daemon=True
            )
            watching.start()
            names = [f"p3k-{index}" for index in range(count)]
            for name, length in zip(names, lengths, strict=True):
                manifest = selector_rayjob(theirs, name, f"sleep {length:.3f}")
                await asyncio.to_thread(
                    stack.custom.create_namespaced_custom_object, "ray.io", "v1", theirs, "rayjobs", manifest
                )
            manifests = [
                selector_rayjob(ours, name, f"sleep {length:.3f}")
                for name, length in zip(names, lengths, strict=True)
            ]
            handles = await start_rayjobs(context.client, queue, manifests, "P3K start")
            results = await results_in_order(handles, "P3K raypilot's jobs ended")
            await asyncio.to_thread(watching.join, 600)
            assert len(kuberay_seen) == count, f"KubeRay ended {len(kuberay_seen)} of {count} RayJobs"
            after = {ns: (await job_reads(stack, ns, pod)).total() for ns, pod in pods.items()}
            ours_latency: list[float] = []
            ours_running = 0.0
            for handle, result in zip(handles, results, strict=True):
                job = await ray_job(stack, ours, result["jobId"])
                ours_latency.append(await wait_completed_at(handle) - job["end_time"] / 1000)
                ours_running += (job["end_time"] - job["start_time"]) / 1000
            theirs_latency: list[float] = []
            theirs_running = 0.0
            for name in names:
                status = stack.custom.get_namespaced_custom_object("ray.io", "v1", theirs, "rayjobs", name)[
                    "status"
                ]
                job = await ray_job(stack, theirs, status["jobId"])
                theirs_latency.append(kuberay_seen[name] - job["end_time"] / 1000)
                theirs_running += (job["end_time"] - job["start_time"]) / 1000
    finally:
        api_client.close()
    ours_rate = (after[ours] - before[ours]) / ours_running
    theirs_rate = (after[theirs] - before[theirs]) / theirs_running
    return [
        Figure(
            "P3K",
            f"job-end detection and dashboard reads, {count} RayJobs at once on a cluster per side, beside "
            "KubeRay v1.5.0 (real stack)",
            f"raypilot {latencies(ours_latency)}; {ours_rate:.3f} req/s/job",
            f"KubeRay {latencies(theirs_latency)}; {theirs_rate:.3f} req/s/job",
            "median <= 1 s at <= 0.2 req/s/job",
            percentile(ours_latency, 50) <= LATENCY_TARGET_S and ours_rate <= RATE_TARGET,
        )
    ]
