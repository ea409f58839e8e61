"""The waits against the real API server and simulated Ray: they return on a change (or on reaching their
goal) and not before, heartbeat the latest view, and end at once when cancelled."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError

from activities import errors
from activities.kubernetes.clusters import RayClusterActivities, ServiceActivities
from activities.kubernetes.resources import RAYCLUSTER
from activities.kubernetes.workloads import WorkloadActivities
from activities.registry import ActivityDependencies
from activities.waits import DashboardWaits, KubernetesWaits
from sandbox.testing import wait_until
from tests.activities.conftest import (
    RecordingEnvironment,
    run_activity,
    running_pod,
    small_raycluster,
    submitter_body,
    unscheduled_pod,
)
from wire.kubernetes import (
    CreateObject,
    DeleteObject,
    ObjectKey,
    WaitClusterPods,
    WaitGateway,
    WaitObject,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.views import cluster_pods_view, raycluster_head_ready, raycluster_view

pytestmark = pytest.mark.timeout(60)


async def create_cluster(
    deps: ActivityDependencies, namespace: str, name: str, *, suspend: bool = False
) -> dict[str, Any]:
    body = small_raycluster(name, namespace)
    if suspend:
        body["spec"]["suspend"] = True  # KubeRay keeps it without pods: never ready
    created: dict[str, Any] = await asyncio.to_thread(
        run_activity, RayClusterActivities(deps).create_raycluster, CreateObject(body)
    )
    return created


async def first_heartbeat(recording: RecordingEnvironment) -> Any:
    await wait_until(lambda: recording.heartbeats, within=10, interval=0.01, what="a heartbeat")
    return recording.heartbeats[0]


async def test_wait_raycluster_returns_at_once_without_a_last_view(
    deps: ActivityDependencies, namespace: str, recording: RecordingEnvironment
) -> None:
    created = await create_cluster(deps, namespace, "rc")
    observed = await recording.env.run(KubernetesWaits(deps).wait_raycluster, WaitRayCluster(namespace, "rc"))
    assert observed.view["exists"] is True
    assert observed.view["uid"] == created["metadata"]["uid"]
    assert observed.object is not None
    assert "managedFields" not in observed.object["metadata"]


async def test_wait_raycluster_until_ready_then_returns_on_change_only(
    deps: ActivityDependencies, namespace: str, recording: RecordingEnvironment
) -> None:
    await create_cluster(deps, namespace, "rc")
    waits = KubernetesWaits(deps)
    async with asyncio.timeout(30):
        ready = await recording.env.run(waits.wait_raycluster, WaitRayCluster(namespace, "rc", until="ready"))
    assert ready.view["state"] == "ready"
    assert raycluster_head_ready(ready.view)

    settled = RecordingEnvironment().with_heartbeat_timeout(0.3)
    waiting = asyncio.create_task(
        settled.env.run(waits.wait_raycluster, WaitRayCluster(namespace, "rc", last_view=ready.view))
    )
    await first_heartbeat(settled)
    await asyncio.sleep(0.5)
    assert not waiting.done(), "the wait returned although nothing changed"
    assert settled.heartbeats[-1]["view"] == ready.view

    await asyncio.to_thread(
        run_activity, RayClusterActivities(deps).suspend_worker_groups, ObjectKey(namespace, "rc")
    )
    async with asyncio.timeout(10):
        changed = await waiting
    assert changed.view["generation"] == ready.view["generation"] + 1
    assert changed.object is not None
    assert "spec" not in changed.object
    assert changed.object["status"]


async def test_wait_raycluster_for_readiness_ends_when_the_cluster_is_gone(
    deps: ActivityDependencies, namespace: str, recording: RecordingEnvironment
) -> None:
    await create_cluster(deps, namespace, "rc", suspend=True)
    waits = KubernetesWaits(deps)
    waiting = asyncio.create_task(
        recording.env.run(waits.wait_raycluster, WaitRayCluster(namespace, "rc", until="head_ready"))
    )
    await first_heartbeat(recording)
    assert not waiting.done()
    await asyncio.to_thread(
        run_activity, RayClusterActivities(deps).delete_raycluster, DeleteObject(namespace, "rc")
    )
    async with asyncio.timeout(10):
        observed = await waiting
    assert observed.view == {"exists": False}
    assert observed.object is None


async def test_wait_is_cancelled_promptly(deps: ActivityDependencies, namespace: str) -> None:
    recording = RecordingEnvironment().with_heartbeat_timeout(30)
    # Waiting for a cluster nobody creates; a long heartbeat interval proves cancellation does not wait
    # for the next heartbeat or the end of the watch request.
    waiting = asyncio.create_task(
        recording.env.run(
            KubernetesWaits(deps).wait_raycluster, WaitRayCluster(namespace, "never", raycluster_view(None))
        )
    )
    await first_heartbeat(recording)
    started = time.monotonic()
    recording.env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert time.monotonic() - started < 1.0


async def test_watch_from_a_version_the_server_no_longer_has_is_gone(
    deps: ActivityDependencies, namespace: str
) -> None:
    # Version 1 is older than anything the API server's watch cache holds for RayClusters, as a version
    # compacted away is: the server answers "too old resource version".
    await create_cluster(deps, namespace, "rc")
    api = deps.apiserver()
    with pytest.raises(ApplicationError) as raised:
        async for _ in api.watch(RAYCLUSTER.path(namespace), {"resourceVersion": "1"}, 5, "watch"):
            pass
    assert raised.value.type == errors.KUBERNETES_GONE


async def test_wait_submitter_job_until_it_completes(
    deps: ActivityDependencies, namespace: str, recording: RecordingEnvironment
) -> None:
    body = submitter_body("submitter", namespace)
    await asyncio.to_thread(run_activity, WorkloadActivities(deps).create_job, CreateObject(body))
    waits = KubernetesWaits(deps)
    view: dict[str, Any] | None = None
    async with asyncio.timeout(30):
        while True:
            observed = await recording.env.run(
                waits.wait_submitter_job, WaitObject(namespace, "submitter", view)
            )
            assert observed.view != view
            view = observed.view
            if ["Complete", "True", ""] in [[c[0], c[1], ""] for c in view["conditions"]]:
                break
    assert observed.object is not None
    assert "template" not in observed.object["spec"]


async def test_wait_head_pod_returns_when_the_pod_goes(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api, recording: RecordingEnvironment
) -> None:
    pod = unscheduled_pod("rc-head", {"ray.io/cluster": "rc", "ray.io/node-type": "head"})
    core_api.create_namespaced_pod(namespace, pod)
    waits = KubernetesWaits(deps)
    first = await recording.env.run(waits.wait_head_pod, WaitObject(namespace, "rc"))
    assert first.view["name"] == "rc-head"
    waiting = asyncio.create_task(
        recording.env.run(waits.wait_head_pod, WaitObject(namespace, "rc", first.view))
    )
    await asyncio.sleep(0.2)
    assert not waiting.done()
    core_api.delete_namespaced_pod("rc-head", namespace, grace_period_seconds=0)
    async with asyncio.timeout(10):
        gone = await waiting
    assert gone.view == {"exists": False} or gone.view["deleting"] is True


async def test_wait_gateway_until_ready(
    deps: ActivityDependencies, namespace: str, recording: RecordingEnvironment
) -> None:
    backend = {
        "metadata": {"name": "rc-serve-svc", "namespace": namespace},
        "spec": {"selector": {"ray.io/cluster": "rc"}, "ports": [{"name": "serve", "port": 8000}]},
    }
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "svc-gateway", "namespace": namespace},
        "spec": {
            "gatewayClassName": "sandbox",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        },
    }
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "svc-httproute", "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": "svc-gateway", "namespace": namespace}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [
                        {"name": "rc-serve-svc", "namespace": namespace, "port": 8000, "weight": 100}
                    ],
                }
            ],
        },
    }
    from activities.gateway import GatewayActivities

    await asyncio.to_thread(run_activity, ServiceActivities(deps).create_service, CreateObject(backend))
    gateways = GatewayActivities(deps)
    await asyncio.to_thread(run_activity, gateways.create_gateway, CreateObject(gateway))
    await asyncio.to_thread(run_activity, gateways.create_httproute, CreateObject(route))
    async with asyncio.timeout(20):
        observed = await recording.env.run(
            DashboardWaits(deps).wait_gateway,
            WaitGateway(namespace, "svc-gateway", "svc-httproute", poll_seconds=0.05),
        )
    assert observed.ready is True
    assert observed.gateway is not None
    assert observed.gateway["status"]["addresses"]


async def test_wait_ready_endpoints_returns_when_a_ready_pod_appears(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api, recording: RecordingEnvironment
) -> None:
    service = client.V1Service(
        metadata=client.V1ObjectMeta(name="serve"),
        spec=client.V1ServiceSpec(
            selector={"app": "serve"}, ports=[client.V1ServicePort(name="serve", port=8000)]
        ),
    )
    core_api.create_namespaced_service(namespace, service)
    waits = KubernetesWaits(deps)
    first = await recording.env.run(waits.wait_ready_endpoints, WaitReadyEndpoints(namespace, ["serve"]))
    assert first == {"serve": 0}
    waiting = asyncio.create_task(
        recording.env.run(waits.wait_ready_endpoints, WaitReadyEndpoints(namespace, ["serve"], first))
    )
    await asyncio.sleep(0.2)
    assert not waiting.done()
    core_api.create_namespaced_pod(namespace, running_pod("serve-pod", {"app": "serve"}))
    async with asyncio.timeout(30):
        assert await waiting == {"serve": 1}


async def test_wait_cluster_pods_returns_when_a_pod_goes_and_not_before(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api, recording: RecordingEnvironment
) -> None:
    for name, node_type in (("rc-head", "head"), ("rc-worker", "worker")):
        labels = {"ray.io/cluster": "rc", "ray.io/node-type": node_type, "ray.io/group": "g"}
        core_api.create_namespaced_pod(namespace, unscheduled_pod(name, labels))
    core_api.create_namespaced_pod(namespace, unscheduled_pod("elsewhere", {"ray.io/cluster": "other"}))
    waits = KubernetesWaits(deps)
    first = await recording.env.run(waits.wait_cluster_pods, WaitClusterPods(namespace, "rc"))
    assert sorted(pod["metadata"]["name"] for pod in first.pods) == ["rc-head", "rc-worker"]
    assert first.view == cluster_pods_view(first.pods)
    waiting = asyncio.create_task(
        recording.env.run(waits.wait_cluster_pods, WaitClusterPods(namespace, "rc", first.view))
    )
    await asyncio.sleep(0.3)
    core_api.delete_namespaced_pod("elsewhere", namespace, grace_period_seconds=0)  # not this cluster's
    await asyncio.sleep(0.3)
    assert not waiting.done()
    core_api.delete_namespaced_pod("rc-worker", namespace, grace_period_seconds=0)
    async with asyncio.timeout(10):
        changed = await waiting
    assert changed.view != first.view
    worker = [pod for pod in changed.pods if pod["metadata"]["name"] == "rc-worker"]
    assert worker == [] or worker[0]["metadata"].get("deletionTimestamp")
