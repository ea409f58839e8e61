"""raypilot's workflows on the real stack: etcd, kube-apiserver (RBAC), kube-controller-manager, KubeRay's
operator v1.5.0 reconciling the RayClusters raypilot creates, and raypilot's node agent running their pods
with real Ray. The worker is installed as users install it (deploy/'s CRDs and ClusterRoles, a ServiceAccount
token), so every request it makes is one that deploy/'s RBAC allows on a real API server.

- RayJobs in HTTPMode and K8sJobMode (the submitter is a real Job, completed by the real job controller from
  the status the node agent reports) succeed; with shutdownAfterJobFinishes the RayCluster is deleted and the
  garbage collector removes its pods;
- a RayService serves its Serve app through the API server's Service proxy, upgrades to a new cluster
  (NewCluster), serves the new version from it, and the old cluster is deleted;
- a RayService upgrades incrementally (NewClusterWithIncrementalUpgrade, Ray's autoscaler beside each head)
  through the sandbox's Gateway controller reading the real API server, under keep-alive load, losing no
  request;
- a RayJob loses nothing and creates nothing twice when kube-apiserver and then etcd restart under it, nor
  through a fault proxy in front of the API server (5xx, 409, 429 with Retry-After, latency, watches cut
  every few seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config
from temporalio.testing import WorkflowEnvironment

from raypilot.load import SteadyLoad
from sandbox.faults import FaultRule
from sandbox.listwatch import SYNC, list_then_watch
from sandbox.realkube.controlplane import ControlPlane, control_plane
from sandbox.realkube.faultproxy import FaultProxy, fault_proxy, proxied_kubeconfig
from sandbox.realkube.gateway import gateway_controller
from sandbox.realkube.install import install_raypilot
from sandbox.realkube.node import node_agent
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.route_watch import routed_gateway_url
from tests.integration.stack import kubeconfig_worker

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
SMALL = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    directory = tmp_path_factory.mktemp("raypilot-realkube")
    with (
        control_plane(directory) as started,
        node_agent(started, directory / "agent"),
        gateway_controller(started),
    ):
        yield started


@pytest.fixture(scope="module")
def worker_kubeconfig(plane: ControlPlane) -> Path:
    return install_raypilot(plane)


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


def objects(plane: ControlPlane, kind: str, namespace: str, selector: str) -> list[dict[str, Any]]:
    listing = plane.kubectl("get", kind, "-n", namespace, "-l", selector, "-o", "json")
    items: list[dict[str, Any]] = json.loads(listing)["items"]
    return items


def small(manifest: dict[str, Any]) -> dict[str, Any]:
    """The example's cluster with 1 GiB per Ray node: two real nodes per job on a shared machine."""
    cluster = manifest["spec"]["rayClusterSpec"]
    for group in [cluster["headGroupSpec"], *(cluster.get("workerGroupSpecs") or [])]:
        group["template"]["spec"]["containers"][0]["resources"] = SMALL
    return manifest


@pytest.mark.parametrize("mode", ["HTTPMode", "K8sJobMode"])
async def test_a_rayjob_completes_and_its_cluster_goes(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment, mode: str
) -> None:
    namespace = f"real-{mode.lower()}"
    plane.kubectl("create", "namespace", namespace)
    manifest = small(example("rayjob-k8sjobmode", namespace, rename="job", submissionMode=mode))
    manifest["spec"]["shutdownAfterJobFinishes"] = True
    handle = await dev_server_env.client.start_workflow(
        "RayJobWorkflow", manifest, id=f"rayjob/{namespace}/job", task_queue=task_queue
    )
    result: dict[str, Any] = await asyncio.wait_for(handle.result(), WITHIN_S)
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    selector = "ray.io/originated-from-crd=RayJob,ray.io/originated-from-cr-name=job"
    if mode == "K8sJobMode":
        (submitter,) = objects(plane, "jobs", namespace, selector)
        assert any(
            c["type"] == "Complete" and c["status"] == "True" for c in submitter["status"]["conditions"]
        )

    async def cluster_and_pods_gone() -> bool:
        clusters = await asyncio.to_thread(objects, plane, "rayclusters", namespace, selector)
        pods = await asyncio.to_thread(objects, plane, "pods", namespace, "ray.io/is-ray-node=yes")
        return not clusters and not pods

    await wait_until(cluster_and_pods_gone, within=120, interval=1.0, what="the RayCluster and its pods gone")


def rayservice(namespace: str, version: str) -> dict[str, Any]:
    manifest = example("rayservice-newcluster", namespace, rename="svc")
    cluster = manifest["spec"]["rayClusterConfig"]
    cluster["workerGroupSpecs"] = []  # Serve's one replica fits the head: one real Ray node per cluster
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = SMALL
    head["env"] = [{"name": "APP_VERSION", "value": version}]
    return manifest


async def test_a_rayservice_serves_then_upgrades_to_a_new_cluster(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    namespace = "real-rayservice"
    plane.kubectl("create", "namespace", namespace)
    handle = await dev_server_env.client.start_workflow(
        "RayServiceWorkflow",
        rayservice(namespace, "v1"),
        id=f"rayservice/{namespace}/svc",
        task_queue=task_queue,
    )
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


async def test_a_rayjob_loses_nothing_and_creates_nothing_twice_across_api_server_and_etcd_restarts(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    """kube-apiserver restarts while raypilot waits for the new cluster (its watches break, its requests are
    refused), etcd while the job runs; the RayJob completes with the RayCluster and the submitter Job it
    created before the restarts, one of each."""
    namespace = "real-restarts"
    plane.kubectl("create", "namespace", namespace)
    manifest = small(example("rayjob-k8sjobmode", namespace, rename="job"))
    # Long enough that etcd restarts while the job runs.
    manifest["spec"]["entrypoint"] = (
        "python -c \"import time, ray; ray.init(); time.sleep(20); print('done')\""
    )
    handle = await dev_server_env.client.start_workflow(
        "RayJobWorkflow", manifest, id=f"rayjob/{namespace}/job", task_queue=task_queue
    )
    selector = "ray.io/originated-from-crd=RayJob,ray.io/originated-from-cr-name=job"

    def uids(kind: str) -> list[str]:
        return [item["metadata"]["uid"] for item in objects(plane, kind, namespace, selector)]

    async def created(kind: str) -> list[str] | None:
        return await asyncio.to_thread(uids, kind) or None

    cluster = await wait_until(lambda: created("rayclusters"), within=60, interval=0.5, what="the RayCluster")
    await asyncio.to_thread(plane.restart, "kube-apiserver")
    submitter = await wait_until(lambda: created("jobs"), within=WITHIN_S, interval=0.5, what="the submitter")
    await asyncio.to_thread(plane.restart, "etcd")

    result: dict[str, Any] = await asyncio.wait_for(handle.result(), WITHIN_S)
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert await asyncio.to_thread(uids, "rayclusters") == cluster
    assert await asyncio.to_thread(uids, "jobs") == submitter


FAULTS = [
    FaultRule(error_rate=0.10, status=500),
    FaultRule(verbs=frozenset({"create", "update", "patch"}), error_rate=0.10, status=409),
    FaultRule(error_rate=0.05, status=429, retry_after_seconds=1),
    FaultRule(latency_seconds=0.05),
]


@contextlib.contextmanager
def uids_seen(plane: ControlPlane, namespace: str) -> Iterator[dict[str, set[str]]]:
    """Every RayCluster and Job that exists in `namespace` at any moment of the block, by kind (admin
    credentials, no faults): an object created twice shows as two uids even if one was deleted at once."""
    seen: dict[str, set[str]] = {"RayCluster": set(), "Job": set()}
    api = config.new_client_from_config(config_file=str(plane.kubeconfig))
    custom, batch = k8s.CustomObjectsApi(api), k8s.BatchV1Api(api)

    def clusters(**options: Any) -> Any:
        return custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", **options)

    def jobs(**options: Any) -> Any:
        return batch.list_namespaced_job(namespace, **options)

    def record(kind: str, event: str, obj: dict[str, Any]) -> None:
        for item in obj.get("items") or [] if event == SYNC else [obj]:
            seen[kind].add(item["metadata"]["uid"])

    stop = threading.Event()
    readers = [
        threading.Thread(target=list_then_watch, args=(kind, call, record, stop), daemon=True)
        for kind, call in (("RayCluster", clusters), ("Job", jobs))
    ]
    for reader in readers:
        reader.start()
    try:
        yield seen
    finally:
        stop.set()
        api.close()


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
            handle = await dev_server_env.client.start_workflow(
                "RayJobWorkflow", manifest, id=f"rayjob/{namespace}/job", task_queue=queue
            )
            result: dict[str, Any] = await asyncio.wait_for(handle.result(), WITHIN_S)
            selector = "ray.io/is-ray-node=yes"

            async def pods_gone() -> bool:
                return not await asyncio.to_thread(objects, plane, "pods", namespace, selector)

            await wait_until(pods_gone, within=120, interval=1.0, what="the cluster's pods gone")
        finally:
            injected = Counter[int]()
            for rule in proxy.faults.to_json()["rules"]:
                injected[rule["status"]] += rule["injected"]
            proxy.faults.clear()
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert all(injected[code] for code in (500, 409, 429)), injected  # the run was disturbed
    assert (len(seen["RayCluster"]), len(seen["Job"])) == (1, 1), seen
    assert not await asyncio.to_thread(
        objects, plane, "rayclusters", namespace, "ray.io/originated-from-crd=RayJob"
    )


def incremental(namespace: str, version: str) -> dict[str, Any]:
    """The example with one real Ray node per cluster and quick steps: half the capacity, then all."""
    manifest = example("rayservice-incremental", namespace, rename="inc")
    manifest["spec"]["upgradeStrategy"]["clusterUpgradeOptions"].update(
        maxSurgePercent=100, stepSizePercent=50, intervalSeconds=2
    )
    cluster = manifest["spec"]["rayClusterConfig"]
    for group in cluster["workerGroupSpecs"]:
        group.update(replicas=0, minReplicas=0)
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = SMALL
    head["env"] = [{"name": "APP_VERSION", "value": version}]
    return manifest


async def test_a_rayservice_upgrades_incrementally_through_the_gateway_losing_no_request(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    namespace = "real-incremental"
    plane.kubectl("create", "namespace", namespace)
    handle = await dev_server_env.client.start_workflow(
        "RayServiceWorkflow",
        incremental(namespace, "v1"),
        id=f"rayservice/{namespace}/inc",
        task_queue=task_queue,
    )

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
