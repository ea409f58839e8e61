"""RayJobs on real Ray through the real worker and activities, on the real stack (KubeRay's operator makes
the RayClusters' Pods, the node agent runs them as real Ray nodes; the worker is raypilot's ServiceAccount).

Two heads and one worker node in all: one RayCluster shared through clusterSelector runs K8sJobMode and
HTTPMode jobs that succeed and fail (concurrently), and one RayJob-owned cluster exercises the deletion rules:
DeleteWorkers at once (the head keeps answering), then DeleteCluster at endTime + TTL, timed against the wall
clock.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sandbox.testing import raycluster_manifest, wait_until
from tests.integration.rayjob_support import (
    assert_deleted_when_due,
    create_raycluster,
    dashboard,
    example,
    first_raycluster_deletion,
    head_service,
    normal_event,
    parse_time,
    ray_job,
    rayjob_events,
    reasons,
)
from tests.integration.stack import Stack

pytestmark = [pytest.mark.devserver, pytest.mark.ray, pytest.mark.timeout(420)]

# The examples' driver (it connects to the cluster) for K8sJobMode; a plain one for HTTPMode is lighter.
SUCCEEDS_WITH_RAY = 'python -c "import ray; ray.init(); print(ray.cluster_resources())"'
SUCCEEDS = "python -c \"print('done')\""
FAILS = "python -c \"import sys; print('failing on purpose'); sys.exit(3)\""
DELETE_CLUSTER_TTL_S = 10


async def test_k8s_job_and_http_modes_succeed_and_fail_on_real_ray(real_ray_kube_stack: Stack) -> None:
    stack = real_ray_kube_stack
    namespace = stack.namespace()
    await create_raycluster(stack, raycluster_manifest("shared-cluster", namespace, workers=0), within=120)
    cases = {
        ("K8sJobMode", SUCCEEDS_WITH_RAY): "k8s-ok",
        ("K8sJobMode", FAILS): "k8s-fails",
        ("HTTPMode", SUCCEEDS): "http-ok",
        ("HTTPMode", FAILS): "http-fails",
    }
    handles = {
        name: await stack.start(
            example(
                "rayjob-clusterselector", namespace, rename=name, submissionMode=mode, entrypoint=entrypoint
            )
        )
        for (mode, entrypoint), name in cases.items()
    }
    results = dict(zip(handles, await asyncio.gather(*(h.result() for h in handles.values())), strict=True))

    for name in ("k8s-ok", "http-ok"):
        result = results[name]
        assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
        assert result["succeeded"] == 1
    for name in ("k8s-fails", "http-fails"):
        result = results[name]
        assert (result["jobDeploymentStatus"], result["jobStatus"], result["reason"]) == (
            "Failed",
            "FAILED",
            "AppFailed",
        ), result
        assert result["message"].startswith("Job entrypoint command failed with exit code 3"), result
        assert "failing on purpose" in result["message"]
        assert result["failed"] == 1
        details = await ray_job(stack, namespace, head_service(result), result["jobId"])
        assert details["error_type"] == "JOB_ENTRYPOINT_COMMAND_ERROR", details
        assert details["driver_exit_code"] == 3
    for name in ("k8s-ok", "k8s-fails"):
        submitter_status = stack.batch.read_namespaced_job(name, namespace).status
        assert submitter_status is not None
        assert submitter_status.succeeded == 1, "a failing entrypoint is not a failed submission"
        assert "CreatedRayJobSubmitter" in reasons(rayjob_events(stack, namespace, name))
    cluster: dict[str, Any] = stack.custom.get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "shared-cluster"
    )
    assert cluster["status"]["state"] == "ready", "the shared cluster was left as it was"
    # Free the head (~800 MB) for the next test, as its owner would.
    stack.custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", "shared-cluster")


async def test_delete_workers_then_delete_cluster_at_end_time_plus_ttl(real_ray_kube_stack: Stack) -> None:
    stack = real_ray_kube_stack
    namespace = stack.namespace()
    rules = [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
        {
            "policy": "DeleteCluster",
            "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": DELETE_CLUSTER_TTL_S},
        },
    ]
    manifest = example(
        "rayjob-deletion-workers",
        namespace,
        submissionMode="HTTPMode",
        deletionStrategy={"deletionRules": rules},
    )
    deletion_seen = asyncio.create_task(
        asyncio.to_thread(first_raycluster_deletion, stack, namespace, within=300)
    )
    handle = await stack.start(manifest)
    running = await stack.wait_status(
        handle, lambda s: s.get("jobDeploymentStatus") == "Running", within=180, what="Running"
    )
    cluster_name = running["rayClusterName"]

    def worker_pods() -> list[Any]:
        selector = f"ray.io/cluster={cluster_name},ray.io/node-type=worker"
        return list(stack.core.list_namespaced_pod(namespace, label_selector=selector).items)

    assert len(worker_pods()) == 1
    status = await stack.wait_status(
        handle, lambda s: s.get("jobDeploymentStatus") == "Complete", within=180, what="Complete"
    )

    await wait_until(
        lambda: not worker_pods(), within=DELETE_CLUSTER_TTL_S, interval=0.1, what="worker pods deleted"
    )
    cluster = stack.custom.get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", cluster_name
    )
    assert all(group.get("suspend") for group in cluster["spec"]["workerGroupSpecs"])
    answer = await dashboard(stack, namespace, head_service(status), "GET", "/api/version")
    assert answer.status_code == 200, answer.text
    assert answer.json()["ray_version"] == "2.60.0"
    assert not deletion_seen.done(), "DeleteCluster ran before its TTL"

    deleted_at = await deletion_seen
    result = await handle.result()
    due = parse_time(result["endTime"]) + DELETE_CLUSTER_TTL_S
    print(f"DeleteCluster observed {deleted_at - due:+.3f} s after endTime + {DELETE_CLUSTER_TTL_S} s")
    await assert_deleted_when_due(handle, deleted_at, due)
    assert not stack.exists("rayclusters", namespace, cluster_name)
    events = rayjob_events(stack, namespace, "rayjob-deletion-workers")
    suspended = f"Set the `suspend` field to true for all worker groups in cluster {namespace}/{cluster_name}"
    assert normal_event("UpdatedRayCluster", suspended) in events
    assert normal_event("DeletedRayCluster", f"Deleted cluster {namespace}/{cluster_name}") in events
