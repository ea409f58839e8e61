"""Moving from a running KubeRay to raypilot, for real: KubeRay's operator (v1.5.0, in its pod on the real
stack, simulated Ray) runs a `ray.io/v1` object, which is deleted leaving what it made (docs/gitops.md);
the same manifest as `raypilot.io/v1` (through `raypilot controller`) or `raypilot adopt` takes that over.

- A RayService, deleted with `--cascade=orphan`: the workflow starts from the cluster that serves, creating
  none; clients of the serve Service's clusterIP (through kube-proxy), kept-alive and one connection per
  request, lose no request from before the move to after it. And back, as docs/gitops.md says: deleted with
  `--cascade=orphan`, raypilot lets go of the cluster, KubeRay's operator serves the same manifest from a
  cluster of its own, and the old cluster is deleted; the same clients lose no request until that deletion,
  when a kept-alive connection still on the old cluster can lose the one request it has in flight.
- A K8sJobMode RayJob whose Ray job is running: KubeRay stops such a job when it sees its RayJob being
  deleted, so what it made is detached and the RayJob goes without finalizers; raypilot then continues that
  Ray job (its submission id read from KubeRay's submitter Job) to SUCCEEDED, with no second submission and
  no second cluster.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.testing import WorkflowEnvironment

from raypilot.cli.common import Console
from raypilot.cli.main import main
from raypilot.load import SteadyLoad
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.rayservice_helpers import rayservice
from tests.integration.stack import kubeconfig_worker
from tests.kubes import RealKube
from tests.realkube.raypilot_support import running_controller

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.devserver,
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

NAMESPACE, NAME = "from-kuberay", "moving"
WITHIN_S = 240.0


@pytest.fixture(scope="module")
async def task_queue(
    real_kube_of_simulated_ray: RealKube, dev_server_env: WorkflowEnvironment
) -> AsyncIterator[str]:
    async with kubeconfig_worker(dev_server_env.client, real_kube_of_simulated_ray.installed.worker) as queue:
        yield queue


async def raypilot(real: RealKube, env: WorkflowEnvironment, task_queue: str, *argv: str) -> tuple[int, str]:
    """`raypilot ARGV` as the cluster's admin runs it; (exit status, stdout + stderr)."""
    out = io.StringIO()
    console_env = {
        "KUBECONFIG": str(real.admin),
        "HOME": "/nonexistent",
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": env.client.namespace,
        "RAYPILOT_TASK_QUEUE": task_queue,
    }
    console = Console(stdout=out, stderr=out, env=console_env)
    code = await asyncio.to_thread(main, list(argv), console)
    return code, out.getvalue()


def kuberay_status(real: RealKube) -> dict[str, Any]:
    found = real.plane.kubectl("get", "rayservices.ray.io", NAME, "-n", NAMESPACE, "-o", "json", check=False)
    return (json.loads(found).get("status") or {}) if found else {}


def serving_cluster(real: RealKube) -> str:
    """The RayCluster the serve Service selects."""
    found = json.loads(
        real.plane.kubectl("get", "service", f"{NAME}-serve-svc", "-n", NAMESPACE, "-o", "json")
    )
    return str(found["spec"]["selector"]["ray.io/cluster"])


async def test_a_kuberay_rayservice_moves_to_raypilot_and_back_losing_no_request(
    real_kube_of_simulated_ray: RealKube, dev_server_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    """Both ways through `raypilot controller` and the same manifest as `ray.io/v1` and `raypilot.io/v1`."""
    real = real_kube_of_simulated_ray
    kubectl = real.plane.kubectl
    kubectl("create", "namespace", NAMESPACE)
    manifest = rayservice(NAMESPACE, NAME, "v1")
    kuberay_file, raypilot_file = tmp_path / "ray.io.yaml", tmp_path / "raypilot.io.yaml"
    kuberay_file.write_text(yaml.safe_dump(manifest))
    raypilot_file.write_text(yaml.safe_dump({**manifest, "apiVersion": "raypilot.io/v1"}))
    kubectl("apply", "-f", str(kuberay_file))

    async def kuberay_ready() -> dict[str, Any] | None:
        status = await asyncio.to_thread(kuberay_status, real)
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])
        return status if ready else None

    await wait_until(kuberay_ready, within=WITHIN_S, interval=1.0, what="KubeRay's RayService Ready")
    cluster = serving_cluster(real)
    cluster_ip = json.loads(kubectl("get", "service", f"{NAME}-serve-svc", "-n", NAMESPACE, "-o", "json"))[
        "spec"
    ]["clusterIP"]
    url = f"http://{cluster_ip}:8000/"

    async with (
        running_controller(real.installed.controller, dev_server_env, task_queue),
        SteadyLoad(url, concurrency=2, pause_s=0.05) as kept_alive,
        SteadyLoad(url, concurrency=2, keep_alive=False, pause_s=0.05) as per_request,
    ):
        await kept_alive.wait_for_requests(20)
        await per_request.wait_for_requests(20)
        await asyncio.to_thread(
            kubectl, "delete", "rayservices.ray.io", NAME, "-n", NAMESPACE, "--cascade=orphan"
        )
        await wait_until(
            lambda: asyncio.to_thread(lambda: not kuberay_status(real)),
            within=60,
            interval=0.5,
            what="KubeRay's RayService gone",
        )
        await asyncio.to_thread(kubectl, "apply", "-f", str(raypilot_file))

        async def running() -> dict[str, Any] | None:
            code, shown = await raypilot(
                real, dev_server_env, task_queue, "status", f"rayservice/{NAMESPACE}/{NAME}", "-o", "json"
            )
            status: dict[str, Any] = json.loads(shown) if code == 0 else {}
            return status if status.get("serviceStatus") == "Running" else None

        adopted = await wait_until(running, within=120, interval=0.5, what="raypilot's RayService Running")
        await kept_alive.wait_for_requests(len(kept_alive.samples) + 50)
        await per_request.wait_for_requests(len(per_request.samples) + 50)
        assert adopted["activeServiceStatus"]["rayClusterName"] == cluster
        assert serving_cluster(real) == cluster
        assert cluster_names(real) == [cluster]  # none created
        failed_moving_over = [len(load.failures) for load in (kept_alive, per_request)]
        served, failed_until_deletion = await back_to_kuberay(
            real, kuberay_file, cluster, (kept_alive, per_request)
        )

    assert failed_moving_over == [0, 0], [load.failures[:5] for load in (kept_alive, per_request)]
    assert failed_until_deletion == [0, 0], [load.failures[:5] for load in (kept_alive, per_request)]
    assert cluster_names(real) == [served]
    # Deleting the old cluster is KubeRay's kind of deletion (nobody drains it): a kept-alive connection stays
    # on the Pod it opened to, so each can lose the one request it has in flight when that Pod goes
    # (docs/gitops.md says so); a client that opens a connection per request loses none.
    assert not per_request.failures, per_request.failures[:5]
    assert len(kept_alive.failures) <= kept_alive.concurrency, kept_alive.failures
    cut = ("RemoteProtocolError", "ReadError")  # the connection went with its Pod
    assert all(sample.detail.startswith(cut) for sample in kept_alive.failures), kept_alive.failures
    for load in (kept_alive, per_request):
        assert set(load.counts()) - {"failed"} == {"v1"}, load.counts()
    kubectl("delete", "rayservices.ray.io", NAME, "-n", NAMESPACE, "--wait=true")


def cluster_names(real: RealKube) -> list[str]:
    listed = json.loads(real.plane.kubectl("get", "rayclusters", "-n", NAMESPACE, "-o", "json"))["items"]
    return sorted(item["metadata"]["name"] for item in listed)


async def back_to_kuberay(
    real: RealKube, kuberay_file: Path, cluster: str, loads: tuple[SteadyLoad, ...]
) -> tuple[str, list[int]]:
    """docs/gitops.md, Moving back to KubeRay, while `loads` run: the RayCluster KubeRay serves from, and each
    load's failures until the old cluster's deletion began."""
    kubectl = real.plane.kubectl
    # `kubectl delete` waits for the object to go, which needs the controller (raypilot's finalizer): in a
    # thread, as every kubectl call here, so that the controller and the clients on this loop go on.
    await asyncio.to_thread(
        kubectl, "delete", "rayservices.raypilot.io", NAME, "-n", NAMESPACE, "--cascade=orphan"
    )
    # To KubeRay, raypilot's cluster is a dangling one of the RayService: it would delete it
    # rayClusterDeletionDelaySeconds after its first look, whether a cluster of its own serves by then or not.
    await asyncio.to_thread(
        kubectl, "label", "rayclusters", cluster, "-n", NAMESPACE, "ray.io/originated-from-cr-name-"
    )
    await asyncio.to_thread(kubectl, "apply", "-f", str(kuberay_file))

    async def kuberay_serves() -> str | None:
        """KubeRay's cluster, once the RayService is Ready (docs/gitops.md waits for that) and its Services
        point at that cluster."""
        status = await asyncio.to_thread(kuberay_status, real)
        active = str((status.get("activeServiceStatus") or {}).get("rayClusterName") or "")
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])
        if not ready or active in ("", cluster):
            return None
        return active if await asyncio.to_thread(serving_cluster, real) == active else None

    served = await wait_until(kuberay_serves, within=WITHIN_S, interval=1.0, what="KubeRay serving again")
    for load in loads:
        await load.wait_for_requests(len(load.samples) + 50)
    failed_until_deletion = [len(load.failures) for load in loads]
    await asyncio.to_thread(kubectl, "delete", "rayclusters", cluster, "-n", NAMESPACE, "--wait=true")
    for load in loads:
        await load.wait_for_requests(len(load.samples) + 50)
    return served, failed_until_deletion


def ray_jobs(real: RealKube, namespace: str, cluster: str) -> list[dict[str, Any]]:
    """The Ray jobs on the cluster's dashboard (through the API server's Service proxy)."""
    path = f"/api/v1/namespaces/{namespace}/services/{cluster}-head-svc:dashboard/proxy/api/jobs/"
    jobs: list[dict[str, Any]] = json.loads(real.plane.kubectl("get", "--raw", path))
    return jobs


async def test_a_running_kuberay_rayjob_moves_to_raypilot_without_a_second_run(
    real_kube_of_simulated_ray: RealKube, dev_server_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    real = real_kube_of_simulated_ray
    namespace, name = "rayjob-from-kuberay", "moving-job"
    real.plane.kubectl("create", "namespace", namespace)
    manifest = example("rayjob-k8sjobmode", namespace, rename=name, entrypoint="sleep 25")
    path = tmp_path / "rayjob.yaml"
    path.write_text(yaml.safe_dump(manifest))
    real.plane.kubectl("apply", "-f", str(path))

    def kuberay_job() -> dict[str, Any]:
        found = real.plane.kubectl("get", "rayjobs.ray.io", name, "-n", namespace, "-o", "json", check=False)
        return (json.loads(found).get("status") or {}) if found else {}

    async def running() -> dict[str, Any] | None:
        status = await asyncio.to_thread(kuberay_job)
        return status if status.get("jobStatus") == "RUNNING" else None

    started = await wait_until(running, within=WITHIN_S, interval=0.5, what="KubeRay's Ray job RUNNING")
    cluster, job_id = started["rayClusterName"], started["jobId"]
    # On deletion KubeRay stops a Ray job that has not ended, finalizer or not, while the object lingers
    # (`--cascade=orphan` adds the garbage collector's own finalizer): a run of this test that deleted with
    # --cascade=orphan ended STOPPED. So what KubeRay made is detached first, and then the RayJob, without
    # finalizers, goes at once, never seen deleting (docs/gitops.md).
    selector = f"ray.io/originated-from-crd=RayJob,ray.io/originated-from-cr-name={name}"
    for kind in ("rayclusters", "jobs", "services"):
        for item in json.loads(
            real.plane.kubectl("get", kind, "-n", namespace, "-l", selector, "-o", "json")
        )["items"]:
            if item["metadata"].get("ownerReferences"):
                real.plane.kubectl(
                    "patch",
                    kind,
                    item["metadata"]["name"],
                    "-n",
                    namespace,
                    "--type=json",
                    "-p",
                    '[{"op": "remove", "path": "/metadata/ownerReferences"}]',
                )
    real.plane.kubectl(
        "patch",
        "rayjobs.ray.io",
        name,
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op": "remove", "path": "/metadata/finalizers"}]',
    )
    real.plane.kubectl("delete", "rayjobs.ray.io", name, "-n", namespace)
    await wait_until(
        lambda: asyncio.to_thread(lambda: not kuberay_job()), within=60, interval=0.5, what="the RayJob gone"
    )
    code, said = await raypilot(
        real, dev_server_env, task_queue, "adopt", f"rayjob/{namespace}/{name}", "-f", str(path)
    )
    assert code == 0, said
    assert f"Ray job {job_id} continues" in said
    handle = dev_server_env.client.get_workflow_handle(f"rayjob/{namespace}/{name}")
    result: dict[str, Any] = await asyncio.wait_for(handle.result(), WITHIN_S)
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert (result["rayClusterName"], result["jobId"]) == (cluster, job_id)
    assert [job["submission_id"] for job in ray_jobs(real, namespace, cluster)] == [job_id]
    listed = json.loads(real.plane.kubectl("get", "rayclusters", "-n", namespace, "-o", "json"))["items"]
    assert [item["metadata"]["name"] for item in listed] == [cluster]
