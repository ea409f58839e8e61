"""Demo step 1: a K8sJobMode RayJob applied as `raypilot.io/v1` (all a KubeRay manifest needs to move over),
started by `raypilot controller` as RayJobWorkflow, shown live (its workflow's status, and the object as
`kubectl get rayjobs.raypilot.io -w` prints it) until the DeleteCluster rule removed its RayCluster ttl
seconds after the job's endTime."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from models.crd import RAYPILOT_API_VERSION, RAYPILOT_GROUP, RAYPILOT_VERSION
from models.naming import workflow_id
from raypilot.cli.demo_kubectl import KubectlWatch
from raypilot.cli.demo_support import (
    POLL_INTERVAL_S,
    ChangePrinter,
    DemoContext,
    DemoFailed,
    example_manifest,
    query_status,
    read_custom,
)
from raypilot.cli.demo_view import JobReport, job_line
from raypilot.cli.render import PhaseMark, advance_timeline, parse_time, render_status, status_phase

JOB_NAME = "demo-job"
TERMINAL_PHASES = ("Complete", "Failed")
# Cluster start (~7 s per real head when idle), submitter, job: 80-100 s were measured with other Ray work on
# the same 2 cores, so the demo waits long before it gives up.
JOB_PATIENCE_S = 600.0
DELETION_PATIENCE_S = 30.0  # beyond the rule's ttl
CONTROLLER_PATIENCE_S = 30.0  # from `kubectl apply` to the workflow the controller starts
STATUS_PATIENCE_S = 5.0  # the controller writes the final status within its interval (0.5 s in the demo)


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


async def _started_by_controller(
    client: Client, namespace: str, look: Callable[[], Any]
) -> WorkflowHandle[Any, Any]:
    """The RayJob's workflow once the controller started it (its status query answers)."""
    handle = client.get_workflow_handle(workflow_id("RayJob", namespace, JOB_NAME))
    deadline = time.monotonic() + CONTROLLER_PATIENCE_S
    while True:
        await look()
        try:
            await query_status(handle)
            return handle
        except RPCError:
            if time.monotonic() > deadline:
                raise DemoFailed(
                    f"the controller started no workflow for {JOB_NAME} within {CONTROLLER_PATIENCE_S:.0f} s"
                ) from None
        await asyncio.sleep(POLL_INTERVAL_S)


def _run_seconds(status: dict[str, Any]) -> float | None:
    started, ended = parse_time(status.get("startTime")), parse_time(status.get("endTime"))
    return (ended - started).total_seconds() if started and ended else None


async def run_rayjob(context: DemoContext) -> JobReport:
    """Applies the RayJob (the controller starts its workflow), prints each change of phase / job status /
    cluster, then waits until the RayCluster is gone and the workflow completed."""
    client, custom, namespace, emit = context.client, context.custom, context.namespace, context.emit
    ttl_s = context.pace.delete_cluster_ttl_s
    manifest = {**demo_job_manifest(namespace, ttl_s), "apiVersion": RAYPILOT_API_VERSION}
    await asyncio.to_thread(
        custom.create_namespaced_custom_object,
        RAYPILOT_GROUP,
        RAYPILOT_VERSION,
        namespace,
        "rayjobs",
        manifest,
    )
    emit(
        f"  rayjob.raypilot.io/{JOB_NAME} created (kubectl apply); DeleteCluster {ttl_s} s after the job ends"
    )
    kubectl = KubectlWatch("RayJob", emit, prefix="  kubectl | ")
    kubectl.start(f"kubectl get rayjobs.raypilot.io -n {namespace} -w")
    began = time.monotonic()

    async def look() -> None:
        kubectl.show(
            await read_custom(custom, RAYPILOT_GROUP, "rayjobs", namespace, JOB_NAME), datetime.now(UTC)
        )

    handle = await _started_by_controller(client, namespace, look)
    emit(f"  workflow {handle.id} started by raypilot controller")
    printer = ChangePrinter(emit)
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
        await look()
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
        await look()
        await asyncio.sleep(POLL_INTERVAL_S)
    final: dict[str, Any] = await asyncio.wait_for(handle.result(), ttl_s + DELETION_PATIENCE_S)
    emit(f"  {time.monotonic() - began:6.1f} s  workflow completed ({final.get('jobDeploymentStatus')})")
    settle = time.monotonic() + STATUS_PATIENCE_S
    while (kubectl.last or [""])[2:3] != [final.get("jobDeploymentStatus")] and time.monotonic() < settle:
        await look()
        await asyncio.sleep(POLL_INTERVAL_S)
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
