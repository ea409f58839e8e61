"""raypilot's RayJob on the real stack (etcd, kube-apiserver with RBAC, kube-controller-manager, kube-proxy,
KubeRay's operator v1.5.0 reconciling the RayClusters raypilot creates, and raypilot's node agent running
their pods as simulated Ray: what is tested here is raypilot against the real API server, not Ray). The worker
and `raypilot controller` are installed as users install them (deploy/'s CRDs and ClusterRoles,
ServiceAccount tokens), so every request they make is one that deploy/'s RBAC allows on a real API server.

- KubeRay's operator, in its pod on the node, runs the same kind of RayJob (`ray.io/v1`) to SUCCEEDED and
  deletes its cluster;
- `raypilot controller` drives a raypilot.io/v1 RayJob (HTTPMode) to Complete, writing its status back; with
  shutdownAfterJobFinishes the RayCluster goes and the garbage collector removes its pods; `kubectl delete`
  of the object ends with its finalizer removed;
- a K8sJobMode RayJob (its submitter a real Job running the real `ray job submit`, completed by the real job
  controller) loses nothing and creates nothing twice when kube-apiserver and then etcd restart under it,
  nor through a fault proxy in front of the API server (5xx, 409, 429 with Retry-After, latency, watches cut
  every few seconds).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.faultproxy import FaultProxy, fault_proxy, proxied_kubeconfig
from sandbox.realkube.install import Installed
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.stack import kubeconfig_worker
from tests.kubes import RealKube
from tests.realkube.raypilot_support import (
    FAULTS,
    RAY_PODS,
    SUBMITTED_BY_JOB,
    objects,
    running_controller,
    start,
    uids_seen,
)

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.devserver,
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

WITHIN_S = 240.0  # the cluster, the job and the deletion on a loaded 2-core machine
WATCH_CUT_S = 5.0
FAULT_SEED = 31


@pytest.fixture(scope="module")
def plane(real_kube_of_simulated_ray: RealKube) -> ControlPlane:
    """The test process's real stack (tests/conftest.py): its processes are this process's, so the last
    test can restart kube-apiserver and etcd; that test ends once KubeRay and the garbage collector have
    acted again after the restarts, so the stack serves the next module as before."""
    return real_kube_of_simulated_ray.plane


@pytest.fixture(scope="module")
def installed(real_kube_of_simulated_ray: RealKube) -> Installed:
    return real_kube_of_simulated_ray.installed


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


async def test_kuberays_operator_runs_its_own_rayjob_beside_raypilot(plane: ControlPlane) -> None:
    """The same K8sJobMode manifest as `ray.io/v1`, reconciled by KubeRay's operator in its pod: it reaches
    the RayCluster's dashboard by the head Service's name, its submitter Job runs, and with
    shutdownAfterJobFinishes it deletes the cluster (what P2K of `make bench` times beside raypilot)."""
    namespace = "kuberay-own"
    plane.kubectl("create", "namespace", namespace)
    manifest = example("rayjob-k8sjobmode", namespace, rename="own", shutdownAfterJobFinishes=True)
    plane.kubectl("apply", "-f", "-", input_text=json.dumps(manifest))

    def status() -> dict[str, Any]:
        found = plane.kubectl("get", "rayjobs.ray.io", "own", "-n", namespace, "-o", "json")
        return json.loads(found).get("status") or {}

    async def complete() -> dict[str, Any] | None:
        now = await asyncio.to_thread(status)
        return now if now.get("jobDeploymentStatus") == "Complete" else None

    done = await wait_until(complete, within=WITHIN_S, interval=1.0, what="KubeRay's RayJob Complete")
    assert done["jobStatus"] == "SUCCEEDED", done
    selector = "ray.io/originated-from-crd=RayJob,ray.io/originated-from-cr-name=own"
    await wait_until(
        lambda: asyncio.to_thread(lambda: not objects(plane, "rayclusters", namespace, selector)),
        within=120,
        interval=1.0,
        what="KubeRay's RayCluster deleted",
    )


async def test_the_controller_drives_a_raypilot_rayjob_to_complete_and_its_deletion(
    plane: ControlPlane, installed: Installed, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    namespace = "real-controller"
    plane.kubectl("create", "namespace", namespace)
    manifest = example("rayjob-httpmode", namespace, rename="job", shutdownAfterJobFinishes=True)
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


async def test_a_rayjob_completes_through_a_faulty_api_creating_each_object_once(
    plane: ControlPlane, faulty: tuple[FaultProxy, str], dev_server_env: WorkflowEnvironment
) -> None:
    proxy, queue = faulty
    namespace = "real-faults"
    plane.kubectl("create", "namespace", namespace)
    manifest = example("rayjob-k8sjobmode", namespace, rename="job")
    manifest["spec"]["shutdownAfterJobFinishes"] = True
    with uids_seen(plane, namespace) as seen:
        proxy.on_loop(lambda running: running.faults.set_rules(FAULTS, seed=FAULT_SEED))
        try:
            handle = await start(dev_server_env, manifest, queue)
            result: dict[str, Any] = await asyncio.wait_for(handle.result(), WITHIN_S)

            async def cluster_gone() -> bool:
                return not await asyncio.to_thread(objects, plane, "rayclusters", namespace, SUBMITTED_BY_JOB)

            await wait_until(cluster_gone, within=120, interval=1.0, what="the RayCluster gone")
        finally:
            injected = Counter[int]()
            for rule in proxy.on_loop(lambda running: running.faults.to_json()["rules"]):
                injected[rule["status"]] += rule["injected"]
            proxy.on_loop(lambda running: running.faults.clear())
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert all(injected[code] for code in (500, 409, 429)), injected  # the run was disturbed
    assert (len(seen["RayCluster"]), len(seen["Job"])) == (1, 1), seen


# Last in the file: after the restarts the control plane's controllers resync for a while.
async def test_a_rayjob_loses_nothing_and_creates_nothing_twice_across_api_server_and_etcd_restarts(
    plane: ControlPlane, task_queue: str, dev_server_env: WorkflowEnvironment
) -> None:
    """kube-apiserver restarts while raypilot waits for the new cluster (its watches break, its requests are
    refused), etcd while the job runs; the RayJob completes with one RayCluster and one submitter Job, which
    the real job controller completed, and the cluster goes."""
    namespace = "real-restarts"
    plane.kubectl("create", "namespace", namespace)
    manifest = example("rayjob-k8sjobmode", namespace, rename="job", shutdownAfterJobFinishes=True)
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
