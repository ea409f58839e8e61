"""Activity code paths the activity tests do not reach, so that the RBAC comparison (test_rbac.py, which runs
tests/activities and this module with an API request log) sees every request the worker can make: the Gateway
and HTTPRoute read/update/delete activities, an in-place RayCluster spec update, each wait's watch (made
certain here, whatever the machine's speed), deleting a RayService resource, and the raypilot.io/notify
webhook's Secret read (tests/activities/test_notify.py reads it from a fake API server). Each also checks
what the activity returns."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities.cronjob_runs import CronJobRunActivities
from activities.gateway import GatewayActivities
from activities.kubernetes.clusters import RayClusterActivities
from activities.kubernetes.events import OwnershipActivities
from activities.kubernetes.workloads import WorkloadActivities
from activities.notify import NotifyActivities
from activities.registry import ActivityDependencies
from activities.waits import KubernetesWaits
from sandbox.testing import raycluster_manifest, wait_until
from tests.activities.conftest import (
    RecordingEnvironment,
    run_activity,
    running_pod,
    small_raycluster,
    submitter_body,
    unscheduled_pod,
)
from tests.activities.test_notify import Receiver, receiving
from tests.activities.test_notify import request as notify_request
from wire.cronjob import RayJobRunRef
from wire.kubernetes import (
    ClusterPods,
    CreateObject,
    DeleteObject,
    ObjectKey,
    Ownership,
    RayResourceKey,
    UpdateSpec,
    WaitClusterPods,
    WaitObject,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.notify import SendNotification
from wire.views import cluster_pods_view, job_view, pod_view, raycluster_view

pytestmark = pytest.mark.timeout(60)


def gateway_body(namespace: str, port: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "svc-gateway", "namespace": namespace},
        "spec": {
            "gatewayClassName": "sandbox",
            "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
        },
    }


def route_body(namespace: str, weights: tuple[int, int]) -> dict[str, Any]:
    backends = [
        {"name": name, "namespace": namespace, "port": 8000, "weight": weight}
        for name, weight in zip(("old-serve-svc", "new-serve-svc"), weights, strict=True)
    ]
    return {
        "metadata": {"name": "svc-httproute", "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": "svc-gateway", "namespace": namespace}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": backends}],
        },
    }


def test_gateway_and_route_are_read_updated_and_deleted(deps: ActivityDependencies, namespace: str) -> None:
    gateways = GatewayActivities(deps)
    run_activity(gateways.create_gateway, CreateObject(gateway_body(namespace, 80)))
    run_activity(gateways.create_httproute, CreateObject(route_body(namespace, (100, 0))))

    new_gateway_spec = gateway_body(namespace, 8080)["spec"]
    updated = run_activity(
        gateways.update_gateway_spec, UpdateSpec(namespace, "svc-gateway", new_gateway_spec)
    )
    assert updated["spec"]["listeners"][0]["port"] == 8080
    shifted = route_body(namespace, (70, 30))["spec"]
    run_activity(gateways.update_httproute_spec, UpdateSpec(namespace, "svc-httproute", shifted))
    route = run_activity(gateways.get_httproute, ObjectKey(namespace, "svc-httproute"))
    assert [ref["weight"] for ref in route["spec"]["rules"][0]["backendRefs"]] == [70, 30]
    assert run_activity(gateways.get_gateway, ObjectKey(namespace, "svc-gateway"))["spec"] == updated["spec"]

    assert run_activity(gateways.delete_httproute, DeleteObject(namespace, "svc-httproute")) is True
    assert run_activity(gateways.delete_gateway, DeleteObject(namespace, "svc-gateway")) is True
    assert run_activity(gateways.delete_gateway, DeleteObject(namespace, "svc-gateway")) is False
    assert run_activity(gateways.get_httproute, ObjectKey(namespace, "svc-httproute")) is None


def test_raycluster_spec_update_in_place(deps: ActivityDependencies, namespace: str) -> None:
    clusters = RayClusterActivities(deps)
    created = run_activity(clusters.create_raycluster, CreateObject(small_raycluster("rc", namespace)))
    spec = created["spec"]
    spec["workerGroupSpecs"][0]["replicas"] = 1
    spec["workerGroupSpecs"][0]["minReplicas"] = 1
    updated = run_activity(
        clusters.update_raycluster_spec, UpdateSpec(namespace, "rc", spec, labels={"tier": "a"})
    )
    assert updated["spec"]["workerGroupSpecs"][0]["replicas"] == 1
    assert updated["metadata"]["labels"]["tier"] == "a"
    assert updated["metadata"]["generation"] > created["metadata"]["generation"]


def test_cluster_pods_are_listed_and_one_is_deleted(deps: ActivityDependencies, namespace: str) -> None:
    clusters, workloads = RayClusterActivities(deps), WorkloadActivities(deps)
    run_activity(clusters.create_raycluster, CreateObject(raycluster_manifest("roll", namespace, workers=1)))

    def both() -> list[dict[str, Any]] | None:
        pods = run_activity(workloads.list_cluster_pods, ClusterPods(namespace, "roll"))
        return pods if len(pods) == 2 else None

    pods = asyncio.run(wait_until(both, what="head and worker pods"))
    worker = next(p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker")
    name, uid = worker["metadata"]["name"], worker["metadata"]["uid"]
    assert run_activity(workloads.delete_pod, DeleteObject(namespace, name, uid=uid)) is True

    def worker_gone() -> bool:  # once the node has stopped its containers (its grace period)
        return all(
            p["metadata"]["uid"] != uid
            for p in run_activity(workloads.list_cluster_pods, ClusterPods(namespace, "roll"))
        )

    asyncio.run(wait_until(worker_gone, within=60, what="the deleted worker pod gone"))
    assert run_activity(workloads.delete_pod, DeleteObject(namespace, name, uid=uid)) is False


def make_ready_serve_endpoint(core_api: client.CoreV1Api, namespace: str) -> None:
    service = client.V1Service(
        metadata=client.V1ObjectMeta(name="serve"),
        spec=client.V1ServiceSpec(selector={"app": "serve"}, ports=[client.V1ServicePort(port=8000)]),
    )
    core_api.create_namespaced_service(namespace, service)
    core_api.create_namespaced_pod(namespace, running_pod("serve-pod", {"app": "serve"}))


WAITS_THAT_WATCH = ["raycluster", "submitter_job", "head_pod", "ready_endpoints", "cluster_pods"]


@pytest.mark.parametrize("wait", WAITS_THAT_WATCH)
async def test_each_wait_watches_until_its_object_appears(
    wait: str,
    deps: ActivityDependencies,
    namespace: str,
    core_api: client.CoreV1Api,
    recording: RecordingEnvironment,
) -> None:
    """The wait lists (nothing there, as last seen), watches, and returns on the object's appearance; the
    object is created only after the wait's first listed view, so the watch request is certain."""
    waits = KubernetesWaits(deps)
    started: dict[str, tuple[Any, Any, Callable[[], Any]]] = {
        "raycluster": (
            waits.wait_raycluster,
            WaitRayCluster(namespace, "rc", raycluster_view(None)),
            lambda: run_activity(
                RayClusterActivities(deps).create_raycluster,
                CreateObject(small_raycluster("rc", namespace)),
            ),
        ),
        "submitter_job": (
            waits.wait_submitter_job,
            WaitObject(namespace, "submitter", job_view(None)),
            lambda: run_activity(
                WorkloadActivities(deps).create_job, CreateObject(submitter_body("submitter", namespace))
            ),
        ),
        "head_pod": (
            waits.wait_head_pod,
            WaitObject(namespace, "rc", pod_view(None)),
            lambda: core_api.create_namespaced_pod(
                namespace, unscheduled_pod("rc-head", {"ray.io/cluster": "rc", "ray.io/node-type": "head"})
            ),
        ),
        "ready_endpoints": (
            waits.wait_ready_endpoints,
            WaitReadyEndpoints(namespace, ["serve"], {"serve": 0}),
            lambda: make_ready_serve_endpoint(core_api, namespace),
        ),
        "cluster_pods": (
            waits.wait_cluster_pods,
            WaitClusterPods(namespace, "rc", cluster_pods_view([])),
            lambda: core_api.create_namespaced_pod(
                namespace,
                unscheduled_pod("rc-worker", {"ray.io/cluster": "rc", "ray.io/node-type": "worker"}),
            ),
        ),
    }
    activity_fn, request, appear = started[wait]
    waiting = asyncio.create_task(recording.env.run(activity_fn, request))
    await wait_until(
        lambda: any(isinstance(beat, dict) and "view" in beat for beat in recording.heartbeats),
        within=30,
        interval=0.05,
        what="the wait's first listed view",
    )
    assert not waiting.done()
    await asyncio.to_thread(appear)
    async with asyncio.timeout(30):
        observed = await waiting
    if wait == "ready_endpoints":
        assert observed == {"serve": 1}
    elif wait == "cluster_pods":
        assert [p["metadata"]["name"] for p in observed.pods] == ["rc-worker"]
    else:
        assert observed.view["exists"] is True


def test_deleting_an_absent_raypilot_io_rayjob_is_not_an_error(
    deps: ActivityDependencies, namespace: str
) -> None:
    """DeleteSelf of a RayJob the controller drives deletes the raypilot.io object (never a ray.io one)."""
    key = RayResourceKey("RayJob", namespace, "never-created", api_version="raypilot.io/v1")
    assert run_activity(OwnershipActivities(deps).delete_ray_resource, key) is False


def test_deleting_an_absent_rayservice_resource_is_not_an_error(
    deps: ActivityDependencies, namespace: str
) -> None:
    key = RayResourceKey("RayService", namespace, "never-created")
    assert run_activity(OwnershipActivities(deps).delete_ray_resource, key) is False


class _TemporalWithoutRuns:
    """The part of a Temporal client `temporal.delete_finished_rayjob` uses, with no run of the RayJob left
    running (this module checks the Kubernetes side; the Temporal side runs in the RayCronJob tests)."""

    namespace = "default"

    def __init__(self) -> None:
        self.deleted: list[Any] = []
        self.workflow_service = self

    async def list_workflows(self, query: str) -> Any:
        for _ in ():
            yield _

    async def delete_workflow_execution(self, request: Any) -> None:
        self.deleted.append(request)


async def test_a_finished_rayjob_of_a_raycronjob_is_deleted_with_what_it_left(
    deps: ActivityDependencies, namespace: str
) -> None:
    ownership = Ownership("RayJob", "nightly-29926905", "rayjob/x/nightly-29926905")
    created = CreateObject(small_raycluster("nightly-29926905-abcde", namespace), ownership=ownership)
    await asyncio.to_thread(run_activity, RayClusterActivities(deps).create_raycluster, created)
    deps.temporal_client = _TemporalWithoutRuns()  # type: ignore[assignment]
    ref = RayJobRunRef(namespace, "nightly-29926905", f"rayjob/{namespace}/nightly-29926905")
    assert await run_activity(CronJobRunActivities(deps).delete_finished_rayjob, ref) is True
    custom = client.CustomObjectsApi(deps.kube().api_client)

    def gone() -> bool:
        return not custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")["items"]

    await wait_until(gone, within=30)


async def test_the_notify_webhook_url_is_read_from_its_secret(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api
) -> None:
    """`get secrets`: the URL of a raypilot.io/notify webhook, from the Secret the annotation names."""
    async with receiving(Receiver()) as receiver:
        core_api.create_namespaced_secret(
            namespace,
            client.V1Secret(metadata=client.V1ObjectMeta(name="hooks"), string_data={"url": receiver.url}),
        )
        sent = notify_request()
        here = SendNotification(
            sent.secret_name,
            sent.secret_key,
            sent.format,
            dataclasses.replace(sent.notification, namespace=namespace),
        )
        status = await ActivityEnvironment().run(NotifyActivities(deps).send_notification, here)
    assert status == 200
    assert len(receiver.posts) == 1
