"""Demo step 1: a K8sJobMode RayJob through RayJobWorkflow, shown live until the DeleteCluster rule removed
its RayCluster ttl seconds after the job's endTime."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s
from temporalio.client import Client

from raypilot.cli.demo_support import (
    POLL_INTERVAL_S,
    ChangePrinter,
    DemoFailed,
    DemoPace,
    example_manifest,
    query_status,
    read_custom,
    start_workflow,
)
from raypilot.cli.demo_view import JobReport, job_line
from raypilot.cli.render import PhaseMark, advance_timeline, parse_time, render_status, status_phase

JOB_NAME = "demo-job"
TERMINAL_PHASES = ("Complete", "Failed")
# Cluster start (~7 s per real head when idle), submitter, job: 80-100 s were measured with other Ray work on
# the same 2 cores, so the demo waits long before it gives up.
JOB_PATIENCE_S = 600.0
DELETION_PATIENCE_S = 30.0  # beyond the rule's ttl


def demo_job_manifest(namespace: str, ttl_s: int) -> dict[str, Any]:
    """examples/rayjob-k8sjobmode.yaml with one deletion rule: delete the RayCluster ttl_s after the job ended
    (succeeded or failed), keeping the RayJob and its submitter Job."""
    manifest = example_manifest("rayjob-k8sjobmode.yaml", JOB_NAME, namespace)
    manifest["spec"]["deletionStrategy"] = {
        "deletionRules": [
            {
                "policy": "DeleteCluster",
                "condition": {"jobStatus": status, "ttlSeconds": ttl_s},
            }
            for status in ("SUCCEEDED", "FAILED")
        ]
    }
    return manifest


def _run_seconds(status: dict[str, Any]) -> float | None:
    started, ended = parse_time(status.get("startTime")), parse_time(status.get("endTime"))
    return (ended - started).total_seconds() if started and ended else None


async def run_rayjob(
    client: Client,
    task_queue: str,
    custom: k8s.CustomObjectsApi,
    namespace: str,
    emit: Callable[[str], None],
    pace: DemoPace,
) -> JobReport:
    """Starts the RayJob workflow, prints each change of phase / job status / cluster, then waits until the
    RayCluster is gone and the workflow completed."""
    ttl_s = pace.delete_cluster_ttl_s
    handle = await start_workflow(client, task_queue, demo_job_manifest(namespace, ttl_s))
    emit(f"  workflow {handle.id} started; DeleteCluster {ttl_s} s after the job ends")
    printer = ChangePrinter(emit)
    began = time.monotonic()
    phases: list[tuple[PhaseMark, ...]] = [()]  # the phases seen, for the `raypilot status` view at the end

    def show(status: dict[str, Any]) -> None:
        printer.show(job_line(0.0, status), job_line(time.monotonic() - began, status))
        phases[0] = advance_timeline(phases[0], status_phase("RayJob", status), datetime.now(UTC))

    status: dict[str, Any] = {}
    while status.get("jobDeploymentStatus") not in TERMINAL_PHASES or not status.get("endTime"):
        if time.monotonic() - began > JOB_PATIENCE_S:
            raise DemoFailed(f"RayJob {JOB_NAME} did not finish within {JOB_PATIENCE_S:.0f} s")
        status = await query_status(handle)
        show(status)
        await asyncio.sleep(POLL_INTERVAL_S)
    cluster = str(status.get("rayClusterName") or "")
    ended = parse_time(status["endTime"])
    deleted_after: float | None = None
    deadline = time.monotonic() + ttl_s + DELETION_PATIENCE_S
    while cluster and time.monotonic() < deadline:
        if await read_custom(custom, "ray.io", "rayclusters", namespace, cluster) is None:
            deleted_after = (datetime.now(ended.tzinfo) - ended).total_seconds() if ended else None
            emit(f"  {time.monotonic() - began:6.1f} s  RayCluster {cluster} deleted")
            break
        show(await query_status(handle))
        await asyncio.sleep(POLL_INTERVAL_S)
    final: dict[str, Any] = await asyncio.wait_for(handle.result(), ttl_s + DELETION_PATIENCE_S)
    emit(f"  {time.monotonic() - began:6.1f} s  workflow completed ({final.get('jobDeploymentStatus')})")
    view = render_status(
        "RayJob", final, ref=handle.id, now=datetime.now(UTC), timeline=phases[0], completed=True
    )
    for line in view.splitlines():
        emit(f"  | {line}")
    return JobReport(
        name=JOB_NAME,
        phase=str(final.get("jobDeploymentStatus") or "?"),
        job_status=str(final.get("jobStatus") or "?"),
        job_id=str(final.get("jobId") or "?"),
        cluster=cluster or "?",
        run_s=_run_seconds(final),
        cluster_deleted_after_end_s=deleted_after,
        ttl_s=ttl_s,
    )
