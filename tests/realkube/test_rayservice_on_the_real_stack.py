"""raypilot's RayService on the real stack with real Ray: etcd, kube-apiserver (RBAC),
kube-controller-manager, kube-proxy, KubeRay's operator v1.5.0 reconciling the RayClusters raypilot creates,
raypilot's node agent running their pods with real Ray and Serve, and the sandbox's Gateway controller reading
the API server. The worker is installed as users install it (deploy/'s CRDs and ClusterRoles, its
ServiceAccount's token).

- a RayService serves its Serve app through the API server's Service proxy, upgrades to a new cluster
  (NewCluster) under load on its serve Service's clusterIP (kube-proxy), losing no request, serves the new
  version from it, and the old cluster is deleted;
- a RayService upgrades incrementally (NewClusterWithIncrementalUpgrade, Ray's autoscaler beside each head)
  through the Gateway under keep-alive load, losing no request.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config
from temporalio.testing import WorkflowEnvironment

from raypilot.load import SteadyLoad
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.install import Installed
from sandbox.testing import wait_until
from tests.integration.route_watch import routed_gateway_url
from tests.kubes import RealKube
from tests.realkube.raypilot_support import incremental, rayservice, start

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.devserver,
    pytest.mark.ray,  # real Ray heads (tests/conftest.py runs such files one after another)
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

WITHIN_S = 420.0  # a real Ray head, Serve and the deletion on a loaded 2-core machine


@pytest.fixture(scope="module")
def plane(real_kube_of_real_ray: RealKube) -> ControlPlane:
    """The process's real stack with real Ray (tests/conftest.py), shared with tests/integration's real-Ray
    files."""
    return real_kube_of_real_ray.plane


@pytest.fixture(scope="module")
def installed(real_kube_of_real_ray: RealKube) -> Installed:
    return real_kube_of_real_ray.installed


async def v2_answering_since(load: SteadyLoad, since: float) -> None:
    """Waits until v2 has answered 20 requests sent since `since`."""
    await wait_until(
        lambda: load.counts(since=since)["v2"] >= 20, within=60, interval=0.5, what="v2 answering"
    )


def timeline(load: SteadyLoad, since: float) -> str:
    """When v1 last answered, v2 first answered and each request failed, in seconds before `since`."""
    last_v1 = max((sample.at for sample in load.samples if sample.version == "v1"), default=None)
    first_v2 = min((sample.at for sample in load.samples if sample.version == "v2"), default=None)
    failed = [f"{since - sample.at:.3f} s ({sample.detail})" for sample in load.failures[:10]]
    seconds = {
        name: None if at is None else round(since - at, 3)
        for name, at in [("v1 last", last_v1), ("v2 first", first_v2)]
    }
    return f"before the old cluster's deletion: {seconds}, failed {failed}"


def assert_v1_then_only_v2(load: SteadyLoad, since: float) -> None:
    """No request failed; v1 answered some; since `since` only v2 answered."""
    counts = load.counts()
    assert not load.failures, (counts, timeline(load, since))
    assert counts["v1"] > 0
    assert set(load.counts(since=since)) == {"v2"}, load.counts(since=since)


async def test_a_rayservice_serves_then_upgrades_to_a_new_cluster(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    namespace = "real-rayservice"
    plane.kubectl("create", "namespace", namespace)
    handle = await start(dev_server_env, rayservice(namespace, "v1"), task_queue)
    proxy = f"/api/v1/namespaces/{namespace}/services/svc-serve-svc:serve/proxy/"

    async def serving(version: str) -> dict[str, Any] | None:
        status: dict[str, Any] = await handle.query("status")
        if status.get("serviceStatus") != "Running" or (status.get("pendingServiceStatus") or {}).get(
            "rayClusterName"
        ):
            return None
        answer = await asyncio.to_thread(plane.kubectl, "get", "--raw", proxy, check=False)
        return status if answer and json.loads(answer).get("version") == version else None

    first = await wait_until(lambda: serving("v1"), within=WITHIN_S, interval=2.0, what="v1 serving")
    old = first["activeServiceStatus"]["rayClusterName"]
    cluster_ip = json.loads(plane.kubectl("get", "service", "svc-serve-svc", "-n", namespace, "-o", "json"))[
        "spec"
    ]["clusterIP"]

    # Clients of the serve Service's clusterIP through kube-proxy, a connection per request: a Service routes
    # connections, so new ones follow the selector's switch to the new cluster.
    async with SteadyLoad(
        f"http://{cluster_ip}:8000/", concurrency=2, keep_alive=False, pause_s=0.05
    ) as load:
        await load.wait_for_requests(20)
        await handle.execute_update("apply", rayservice(namespace, "v2"))
        second = await wait_until(lambda: serving("v2"), within=WITHIN_S, interval=2.0, what="v2 serving")
        assert second["activeServiceStatus"]["rayClusterName"] != old

        async def old_cluster_gone() -> bool:
            listing = await asyncio.to_thread(
                plane.kubectl, "get", "rayclusters", "-n", namespace, "-o", "json"
            )
            return old not in [item["metadata"]["name"] for item in json.loads(listing)["items"]]

        await wait_until(old_cluster_gone, within=120, interval=1.0, what="the old cluster deleted")
        gone_at = time.monotonic()
        await v2_answering_since(load, gone_at)
    assert_v1_then_only_v2(load, gone_at)
    await handle.execute_update("delete", result_type=dict)


async def test_a_rayservice_upgrades_incrementally_through_the_gateway_losing_no_request(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    namespace = "real-incremental"
    plane.kubectl("create", "namespace", namespace)
    handle = await start(dev_server_env, incremental(namespace, "v1"), task_queue)

    async def serving_alone() -> dict[str, Any] | None:
        status: dict[str, Any] = await handle.query("status")
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
        pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
        return status if status.get("serviceStatus") == "Running" and active and not pending else None

    first = await wait_until(serving_alone, within=WITHIN_S, interval=1.0, what="v1 serving alone")
    api = config.new_client_from_config(config_file=str(plane.kubeconfig))
    try:
        url = await routed_gateway_url(k8s.CustomObjectsApi(api), namespace, "inc", within=120)
    finally:
        api.close()
    async with SteadyLoad(url, concurrency=2, pause_s=0.05) as load:
        await load.wait_for_requests(20)
        await handle.execute_update("apply", incremental(namespace, "v2"))

        async def upgraded() -> dict[str, Any] | None:
            status = await serving_alone()
            old = first["activeServiceStatus"]["rayClusterName"]
            return status if status and status["activeServiceStatus"]["rayClusterName"] != old else None

        await wait_until(upgraded, within=WITHIN_S, interval=1.0, what="v2 serving alone")
        upgraded_at = time.monotonic()
        await v2_answering_since(load, upgraded_at)
    assert_v1_then_only_v2(load, upgraded_at)
    await handle.execute_update("delete", result_type=dict)
