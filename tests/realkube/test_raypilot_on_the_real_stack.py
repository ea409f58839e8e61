"""raypilot on the real stack: etcd, kube-apiserver (RBAC), kube-controller-manager, KubeRay's operator v1.5.0
reconciling the RayClusters raypilot creates, raypilot's node agent running their pods with real Ray, and the
sandbox's Gateway controller reading the API server. The worker and `raypilot controller` are installed as
users install them (deploy/'s CRDs and ClusterRoles, ServiceAccount tokens), so every request they make is one
that deploy/'s RBAC allows on a real API server.

- `raypilot controller` drives a raypilot.io/v1 RayJob (HTTPMode) to Complete, writing its status back; with
  shutdownAfterJobFinishes the RayCluster goes and the garbage collector removes its pods; `kubectl delete`
  of the object ends with its finalizer removed;
- a RayService serves its Serve app through the API server's Service proxy, upgrades to a new cluster
  (NewCluster), serves the new version from it, and the old cluster is deleted;
- a RayService upgrades incrementally (NewClusterWithIncrementalUpgrade, Ray's autoscaler beside each head)
  through the Gateway under keep-alive load, losing no request;
- a K8sJobMode RayJob (its submitter a real Job, completed by the real job controller) loses nothing and
  creates nothing twice when kube-apiserver and then etcd restart under it, nor through a fault proxy in
  front of the API server (5xx, 409, 429 with Retry-After, latency, watches cut every few seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from models.features import FeatureGates
from raypilot.controller.kube import ControllerKube
from raypilot.controller.loop import Controller
from raypilot.controller.temporal_io import ControllerTemporal
from raypilot.load import SteadyLoad
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.faultproxy import FaultProxy, fault_proxy, proxied_kubeconfig
from sandbox.realkube.install import Installed, install_raypilot
from sandbox.realkube.stack import real_cluster
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.route_watch import routed_gateway_url
from tests.integration.stack import kubeconfig_worker
from tests.realkube.raypilot_support import (
    FAULTS,
    RAY_PODS,
    SUBMITTED_BY_JOB,
    incremental,
    objects,
    rayservice,
    small,
    uids_seen,
)

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.devserver,
    pytest.mark.ray,  # real Ray heads (tests/conftest.py runs such files one after another)
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

WITHIN_S = 420.0  # a cluster of two real Ray nodes, the job and the deletion on a loaded 2-core machine
WATCH_CUT_S = 5.0
FAULT_SEED = 31


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    directory = tmp_path_factory.mktemp("raypilot-realkube")
    with real_cluster(directory, directory / "agent") as started:
        yield started


@pytest.fixture(scope="module")
def installed(plane: ControlPlane) -> Installed:
    return install_raypilot(plane)


@pytest.fixture(scope="module")
def worker_kubeconfig(installed: Installed) -> Path:
    return installed.worker


@pytest.fixture(scope="module")
async def task_queue(worker_kubeconfig: Path, dev_server_env: WorkflowEnvironment) -> AsyncIterator[str]:
    async with kubeconfig_worker(dev_server_env.client, worker_kubeconfig) as queue:
        yield queue


@pytest.fixture(scope="module")
async def faulty(
    plane: ControlPlane, worker_kubeconfig: Path, dev_server_env: WorkflowEnvironment
) -> AsyncIterator[tuple[FaultProxy, str]]:
    """A second worker, reaching the API server through a fault proxy that cuts every watch after 5 s; the
    test sets the faults once the worker is up."""
    with fault_proxy(plane, drop_watches_after_s=WATCH_CUT_S) as proxy:
        kubeconfig = proxied_kubeconfig(worker_kubeconfig, proxy, plane.directory / "faulty.kubeconfig")
        async with kubeconfig_worker(dev_server_env.client, kubeconfig) as queue:
            yield proxy, queue


async def start(
    env: WorkflowEnvironment, manifest: dict[str, Any], task_queue: str
) -> WorkflowHandle[Any, Any]:
    """The manifest's workflow, with the id docs/contract.md gives it."""
    kind, metadata = str(manifest["kind"]), manifest["metadata"]
    return await env.client.start_workflow(
        f"{kind}Workflow",
        manifest,
        id=f"{kind.lower()}/{metadata['namespace']}/{metadata['name']}",
        task_queue=task_queue,
    )


@contextlib.asynccontextmanager
async def running_controller(
    kubeconfig: Path, env: WorkflowEnvironment, task_queue: str
) -> AsyncIterator[None]:
    """`raypilot controller`'s loop with its ServiceAccount's credentials (deploy/controller's RBAC)."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    controller = Controller(
        ControllerKube(api_client), ControllerTemporal(env.client, task_queue), FeatureGates(), 0.5
    )
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        yield
    finally:
        stop.set()
        await task
        api_client.close()


async def test_the_controller_drives_a_raypilot_rayjob_to_complete_and_its_deletion(
    plane: ControlPlane, installed: Installed, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    namespace = "real-controller"
    plane.kubectl("create", "namespace", namespace)
    manifest = small(example("rayjob-httpmode", namespace, rename="job", shutdownAfterJobFinishes=True))
    manifest["apiVersion"] = "raypilot.io/v1"  # the only change a KubeRay manifest needs

    def status() -> dict[str, Any] | None:
        found = plane.kubectl("get", "rayjobs.raypilot.io", "job", "-n", namespace, "-o", "json", check=False)
        return (json.loads(found).get("status") or {}) if found else None

    async def complete() -> dict[str, Any] | None:
        now = await asyncio.to_thread(status)
        return now if now and now.get("jobDeploymentStatus") == "Complete" else None

    async def gone(kind: str, selector: str) -> bool:
        return not await asyncio.to_thread(objects, plane, kind, namespace, selector)

    async with running_controller(installed.controller, dev_server_env, task_queue):
        plane.kubectl("apply", "-f", "-", input_text=json.dumps(manifest))
        written = await wait_until(
            complete, within=WITHIN_S, interval=1.0, what="Complete in the object's status"
        )
        assert written["jobStatus"] == "SUCCEEDED", written
        await wait_until(
            lambda: gone("pods", RAY_PODS), within=120, interval=1.0, what="the cluster's pods gone"
        )
        assert await gone("rayclusters", SUBMITTED_BY_JOB)
        plane.kubectl("delete", "rayjobs.raypilot.io", "job", "-n", namespace, "--wait=false")
        await wait_until(
            lambda: asyncio.to_thread(lambda: status() is None),
            within=60,
            interval=0.5,
            what="the object gone",
        )


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

    await handle.execute_update("apply", rayservice(namespace, "v2"))
    second = await wait_until(lambda: serving("v2"), within=WITHIN_S, interval=2.0, what="v2 serving")
    assert second["activeServiceStatus"]["rayClusterName"] != old

    async def old_cluster_gone() -> bool:
        listing = await asyncio.to_thread(plane.kubectl, "get", "rayclusters", "-n", namespace, "-o", "json")
        return old not in [item["metadata"]["name"] for item in json.loads(listing)["items"]]

    await wait_until(old_cluster_gone, within=120, interval=1.0, what="the old cluster deleted")


async def test_a_rayjob_completes_through_a_faulty_api_creating_each_object_once(
    plane: ControlPlane, faulty: tuple[FaultProxy, str], dev_server_env: WorkflowEnvironment
) -> None:
    proxy, queue = faulty
    namespace = "real-faults"
    plane.kubectl("create", "namespace", namespace)
    manifest = small(example("rayjob-k8sjobmode", namespace, rename="job"))
    manifest["spec"]["shutdownAfterJobFinishes"] = True
    with uids_seen(plane, namespace) as seen:
        proxy.faults.set_rules(FAULTS, seed=FAULT_SEED)
        try:
            handle = await start(dev_server_env, manifest, queue)
            result: dict[str, Any] = await asyncio.wait_for(handle.result(), WITHIN_S)

            async def cluster_gone() -> bool:
                return not await asyncio.to_thread(objects, plane, "rayclusters", namespace, SUBMITTED_BY_JOB)

            await wait_until(cluster_gone, within=120, interval=1.0, what="the RayCluster gone")
        finally:
            injected = Counter[int]()
            for rule in proxy.faults.to_json()["rules"]:
                injected[rule["status"]] += rule["injected"]
            proxy.faults.clear()
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert all(injected[code] for code in (500, 409, 429)), injected  # the run was disturbed
    assert (len(seen["RayCluster"]), len(seen["Job"])) == (1, 1), seen


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
        await wait_until(
            lambda: load.counts(since=upgraded_at)["v2"] >= 20, within=60, interval=0.5, what="v2 answering"
        )
    counts = load.counts()
    assert not load.failures, (counts, load.failures[:5])
    assert counts["v1"] > 0
    assert load.counts(since=upgraded_at) == Counter({"v2": sum(load.counts(since=upgraded_at).values())})
    await handle.execute_update("delete", result_type=dict)


# Last in the file: after the restarts the control plane's controllers resync for a while.
async def test_a_rayjob_loses_nothing_and_creates_nothing_twice_across_api_server_and_etcd_restarts(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    """kube-apiserver restarts while raypilot waits for the new cluster (its watches break, its requests are
    refused), etcd while the job runs; the RayJob completes with one RayCluster and one submitter Job, which
    the real job controller completed, and the cluster goes."""
    namespace = "real-restarts"
    plane.kubectl("create", "namespace", namespace)
    manifest = small(example("rayjob-k8sjobmode", namespace, rename="job", shutdownAfterJobFinishes=True))
    # Long enough that etcd restarts while the job runs.
    manifest["spec"]["entrypoint"] = (
        "python -c \"import time, ray; ray.init(); time.sleep(20); print('done')\""
    )

    async def exists(kind: str) -> bool:
        return bool(await asyncio.to_thread(objects, plane, kind, namespace, SUBMITTED_BY_JOB))

    with uids_seen(plane, namespace) as seen:
        handle = await start(dev_server_env, manifest, task_queue)
        await wait_until(lambda: exists("rayclusters"), within=60, interval=0.5, what="the RayCluster")
        await asyncio.to_thread(plane.restart, "kube-apiserver")
        await wait_until(lambda: exists("jobs"), within=WITHIN_S, interval=0.5, what="the submitter Job")
        await asyncio.to_thread(plane.restart, "etcd")
        result: dict[str, Any] = await asyncio.wait_for(handle.result(), WITHIN_S)
        (submitter,) = await asyncio.to_thread(objects, plane, "jobs", namespace, SUBMITTED_BY_JOB)

        async def cluster_gone() -> bool:
            return not await exists("rayclusters")

        await wait_until(cluster_gone, within=120, interval=1.0, what="the RayCluster gone")
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in submitter["status"]["conditions"])
    assert (len(seen["RayCluster"]), len(seen["Job"])) == (1, 1), seen
