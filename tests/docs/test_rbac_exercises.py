"""Activity code paths the activity tests do not reach, so that the RBAC comparison (test_rbac.py, which runs
tests/activities and this module with an API request log) sees every request the worker can make: the Gateway
and HTTPRoute read/update/delete activities, an in-place RayCluster spec update, the submitter-Job wait that
has to watch, and deleting a RayService resource. Each also checks what the activity returns."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.gateway import GatewayActivities
from activities.inputs import CreateObject, DeleteObject, ObjectKey, RayResourceKey, UpdateSpec, WaitObject
from activities.kubernetes import RayClusterActivities
from activities.kubernetes_events import OwnershipActivities
from activities.kubernetes_workloads import WorkloadActivities
from activities.registry import ActivityDependencies
from activities.wait_views import job_view
from activities.waits import KubernetesWaits
from sandbox.testing import raycluster_manifest
from tests.activities.conftest import RecordingEnvironment

pytestmark = pytest.mark.timeout(60)


def run(fn: Any, arg: Any) -> Any:
    return ActivityEnvironment().run(fn, arg)


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
    run(gateways.create_gateway, CreateObject(gateway_body(namespace, 80)))
    run(gateways.create_httproute, CreateObject(route_body(namespace, (100, 0))))

    new_gateway_spec = gateway_body(namespace, 8080)["spec"]
    updated = run(gateways.update_gateway_spec, UpdateSpec(namespace, "svc-gateway", new_gateway_spec))
    assert updated["spec"]["listeners"][0]["port"] == 8080
    shifted = route_body(namespace, (70, 30))["spec"]
    run(gateways.update_httproute_spec, UpdateSpec(namespace, "svc-httproute", shifted))
    route = run(gateways.get_httproute, ObjectKey(namespace, "svc-httproute"))
    assert [ref["weight"] for ref in route["spec"]["rules"][0]["backendRefs"]] == [70, 30]
    assert run(gateways.get_gateway, ObjectKey(namespace, "svc-gateway"))["spec"] == updated["spec"]

    assert run(gateways.delete_httproute, DeleteObject(namespace, "svc-httproute")) is True
    assert run(gateways.delete_gateway, DeleteObject(namespace, "svc-gateway")) is True
    assert run(gateways.delete_gateway, DeleteObject(namespace, "svc-gateway")) is False
    assert run(gateways.get_httproute, ObjectKey(namespace, "svc-httproute")) is None


def test_raycluster_spec_update_in_place(deps: ActivityDependencies, namespace: str) -> None:
    clusters = RayClusterActivities(deps)
    created = run(clusters.create_raycluster, CreateObject(raycluster_manifest("rc", namespace, workers=0)))
    spec = created["spec"]
    spec["workerGroupSpecs"][0]["replicas"] = 1
    spec["workerGroupSpecs"][0]["minReplicas"] = 1
    updated = run(clusters.update_raycluster_spec, UpdateSpec(namespace, "rc", spec, labels={"tier": "a"}))
    assert updated["spec"]["workerGroupSpecs"][0]["replicas"] == 1
    assert updated["metadata"]["labels"]["tier"] == "a"
    assert updated["metadata"]["generation"] > created["metadata"]["generation"]


async def test_submitter_wait_watches_until_the_job_appears(
    deps: ActivityDependencies, namespace: str, recording: RecordingEnvironment
) -> None:
    waits = KubernetesWaits(deps)
    waiting = asyncio.create_task(
        recording.env.run(waits.wait_submitter_job, WaitObject(namespace, "submitter", job_view(None)))
    )
    await asyncio.sleep(0.2)  # nothing to await: the point is that the wait has not returned on its own
    assert not waiting.done()
    body = {
        "metadata": {"name": "submitter", "namespace": namespace},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "ray-job-submitter", "image": "x", "command": ["true"]}],
                }
            },
        },
    }
    await asyncio.to_thread(run, WorkloadActivities(deps).create_job, CreateObject(body))
    async with asyncio.timeout(10):
        observed = await waiting
    assert observed.view["exists"] is True


def test_deleting_an_absent_rayservice_resource_is_not_an_error(
    deps: ActivityDependencies, namespace: str
) -> None:
    key = RayResourceKey("RayService", namespace, "never-created")
    assert run(OwnershipActivities(deps).delete_ray_resource, key) is False
