"""RayService manifests, status readers and KubeRay's look, shared by the RayService integration tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import yaml

from sandbox.testing import ConditionTimeout, wait_until
from tests.integration.stack import Stack

EXAMPLE = yaml.safe_load((Path(__file__).parents[2] / "examples" / "rayservice-newcluster.yaml").read_text())
DELETION_DELAY_S = 5
KUBERAY_MADE: dict[str, Any] = {
    "metadata": {
        "labels": {"app.kubernetes.io/created-by": "kuberay-operator"},
        "annotations": {
            "raypilot.io/workflow-id": None,
            "ray.io/hash-without-replicas-and-workers-to-delete": "X",
        },
    }
}
"""A merge patch that makes a RayCluster or Service raypilot made look like KubeRay's leftovers: KubeRay's
label and hash annotation, no workflow annotation."""


def rayservice(namespace: str, name: str, version: str) -> dict[str, Any]:
    manifest: dict[str, Any] = copy.deepcopy(EXAMPLE)
    manifest["metadata"] = {"name": name, "namespace": namespace}
    manifest["spec"]["rayClusterDeletionDelaySeconds"] = DELETION_DELAY_S
    head = manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [{"name": "APP_VERSION", "value": version}]
    return manifest


def head_alone(manifest: dict[str, Any]) -> dict[str, Any]:
    """`manifest` (a RayService, changed in place and returned) with no worker Pods: Serve's replicas (0.1 CPU
    each) fit the head, so on real Ray each cluster is one Ray node (a worker is one more on 2 cores), and
    every replica answers the head's APP_VERSION (a replica on a worker would read its own Pod's
    environment). The worker groups stay, at 0 replicas, for the autoscaler of an incremental upgrade."""
    for group in manifest["spec"]["rayClusterConfig"].get("workerGroupSpecs") or []:
        group.update(replicas=0, minReplicas=0)
    return manifest


def active_cluster(status: dict[str, Any]) -> str:
    return str((status.get("activeServiceStatus") or {}).get("rayClusterName") or "")


def pending_cluster(status: dict[str, Any]) -> str:
    return str((status.get("pendingServiceStatus") or {}).get("rayClusterName") or "")


def is_running(status: dict[str, Any]) -> bool:
    return status.get("serviceStatus") == "Running" and bool(active_cluster(status))


def serving_alone(status: dict[str, Any]) -> bool:
    """Running on an active cluster with no pending one (in incremental mode Ready alone is not enough: it
    counts the pending cluster's serve endpoints too, as KubeRay does)."""
    running = status.get("serviceStatus") == "Running"
    return running and bool(active_cluster(status)) and not pending_cluster(status)


async def wait_for_status(
    stack: Stack, handle: Any, holds: Any, *, within: float, what: str
) -> dict[str, Any]:
    """`stack.wait_status`, failing with the last status seen (what the workflow was waiting for)."""
    try:
        return await stack.wait_status(handle, holds, within=within, what=what)
    except ConditionTimeout:
        status = await stack.status(handle)
        reads = await rank_reads(handle)
        raise AssertionError(
            f"{what} not reached within {within} s; status: {json.dumps(status)[:3000]}; rank reads: {reads}"
        ) from None


async def promoted_away_from(stack: Stack, handle: Any, old: str, *, within: float) -> dict[str, Any]:
    """Waits until a cluster other than `old` is active and none is pending (the upgrade is over); that
    status."""
    return await wait_for_status(
        stack,
        handle,
        lambda status: active_cluster(status) not in ("", old) and not pending_cluster(status),
        within=within,
        what="the new cluster promoted",
    )


async def rank_reads(handle: Any) -> list[str]:
    """What the workflow's replica ranks reads answered or failed with (for failure messages)."""
    notes: list[str] = []
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_failed_event_attributes"):
            failure = event.activity_task_failed_event_attributes.failure
            notes.append(f"failed: {failure.message[:300]}")
        elif event.HasField("activity_task_completed_event_attributes"):
            payloads = event.activity_task_completed_event_attributes.result.payloads
            data = payloads[0].data.decode(errors="replace") if payloads else ""
            if '"ranks"' in data:
                notes.append(data[:300])
    return [note for note in notes if "rank" in note.lower()][-6:]


async def serve_service_answering(url: str, within: float = 60.0) -> None:
    """Waits until `url` (a serve Service's clusterIP) answers 200. kube-proxy programs a new Service's
    clusterIP a moment after its endpoints turn ready (seen refusing connections for 3 s with a core busy), so
    a test whose clients count every failure starts them once it answers."""

    async def answers() -> bool | None:
        try:
            async with httpx.AsyncClient(timeout=2.0, trust_env=False) as client:
                return (await client.get(url)).status_code == 200 or None
        except httpx.HTTPError:
            return None

    await wait_until(answers, within=within, interval=0.2, what=f"the serve Service answering at {url}")


def selected_cluster(stack: Stack, namespace: str, service: str) -> str:
    spec = stack.core.read_namespaced_service(service, namespace).spec
    assert spec is not None
    return str((spec.selector or {}).get("ray.io/cluster") or "")


RANKED_SERVE_CONFIG = """\
target_capacity: {capacity}
applications:
  - name: ranked
    import_path: sandbox.apps.versioned:app
    route_prefix: /
    runtime_env: {{}}
    deployments:
      - name: Versioned
        num_replicas: 4
        ray_actor_options:
          num_cpus: 0.1
"""


def ranked_rayservice(namespace: str, capacity: int) -> dict[str, Any]:
    manifest = head_alone(rayservice(namespace, "ranks", "v1"))
    manifest["spec"]["serveConfigV2"] = RANKED_SERVE_CONFIG.format(capacity=capacity)
    return manifest


def settled_ranks(status: dict[str, Any], count: int) -> list[tuple[int, int]] | None:
    """(rank, worldSize) of the ranked deployment's replicas once `count` replicas all report a rank."""
    app = ((status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}).get("ranked") or {}
    deployment = (app.get("serveDeploymentStatuses") or {}).get("Versioned") or {}
    replicas = deployment.get("replicas") or []
    if len(replicas) != count or any("rank" not in replica for replica in replicas):
        return None
    return sorted((replica["rank"], replica.get("worldSize", -1)) for replica in replicas)


def rank_jobs_left(stack: Stack, namespace: str, cluster: str) -> list[Any]:
    response = stack.core.connect_get_namespaced_service_proxy_with_path(
        f"{cluster}-head-svc:dashboard", namespace, "api/jobs/", _preload_content=False
    )
    jobs = json.loads(response.data)
    return [job for job in jobs if (job.get("metadata") or {}).get("raypilot") == "replica-ranks"]


async def check_ranks_through_target_capacities(stack: Stack, within: float) -> None:
    """A 4-replica deployment at target_capacity 50, 100, 50: ranks 0..N-1 with worldSize 4 once settled
    (N = 2, 4, 2), and no ranks job record left behind."""
    namespace = stack.namespace()
    handle = await stack.start(ranked_rayservice(namespace, 50))
    for step, (capacity, count) in enumerate(((50, 2), (100, 4), (50, 2))):
        if step > 0:  # a Serve config change only: applied to the running cluster
            await handle.execute_update("apply", ranked_rayservice(namespace, capacity))
        status = await wait_for_status(
            stack,
            handle,
            lambda status, count=count: settled_ranks(status, count) is not None,  # type: ignore[misc]
            within=within,
            what=f"{count} ranked replicas at target_capacity {capacity}",
        )
        # world_size is the configured num_replicas, not scaled by target_capacity (seed 003).
        assert settled_ranks(status, count) == [(rank, 4) for rank in range(count)], status
        assert status["serviceStatus"] == "Running"
    assert rank_jobs_left(stack, namespace, active_cluster(status)) == []
    await handle.execute_update("delete")
