"""The Kubernetes observer end to end (real worker, real activities, simulated Ray, on the dev server), on the
real stack: one observer per namespace serves every RayJob's RayCluster, submitter Job and head Pod wait with
a fixed number of list and watch requests (the worker's own, as kube-apiserver's audit log tells them), no
wait activity runs, and a worker restart loses no change."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from sandbox.realkube.audit import audited_requests
from sandbox.realkube.install import NAMESPACE, WORKER_ACCOUNT
from sandbox.testing import wait_until
from tests.integration.rayjob_support import OUTLASTS_THE_HEADS_READINESS_DELAY, example
from tests.integration.stack import Stack, kubeconfig_worker
from tests.kubes import RealKube
from wire.kubernetes_observer import KUBE_OBSERVER_WORKFLOW, kube_observer_workflow_id

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(240)]

# Kinds the observer follows, as the sandbox counts their requests.
FOLLOWED = ("rayclusters", "jobs", "pods")
# Per kind: one list and a watch renewed each minute (plus a relist after an expired watch); what matters is
# that it does not grow with the number of RayJobs.
REQUESTS_PER_KIND = 3
MODES = ("rayjob-httpmode", "rayjob-k8sjobmode", "rayjob-sidecarmode")
# HTTPMode with its own cluster (Initializing wait), K8sJobMode (its submitter Job), SidecarMode (head Pod).
# A K8sJobMode lifecycle here measured 59-63 events through the observer and 61 with the wait activities (the
# same test with the Kubernetes observer off): its two waits become a registration marker, a signal and its
# workflow task each, where a wait activity took three events and a workflow task. The job observer's signals
# (one per Ray job state the workflow sees) make it vary by a few.
TYPICAL_K8S_JOB_MODE_EVENTS = 66


@pytest.fixture(autouse=True)
def observer_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The observers are opt-in; this module's workers read the setting from this process's environment."""
    monkeypatch.setenv("RAYPILOT_JOB_OBSERVER", "true")


@dataclass
class ObservedKube:
    """The real stack with what the tests need of it: a worker on a task queue, and the worker's list and
    watch requests of the followed kinds in a namespace so far."""

    client: Client
    api_client: k8s.ApiClient
    worker: Callable[[str | None], AbstractAsyncContextManager[str]]
    followed_requests: Callable[[str], Counter[str]]

    def stack(self, task_queue: str) -> Stack:
        return Stack(self.client, task_queue, self.api_client)


def _followed(requests: Counter[str]) -> Counter[str]:
    """The list and watch requests of the followed kinds."""
    return Counter(
        {
            key: count
            for key, count in requests.items()
            if key.split(" ")[0] in ("list", "watch") and key.split(" ")[-1] in FOLLOWED
        }
    )


@pytest.fixture(scope="module")
async def kube(
    dev_server_env: WorkflowEnvironment, real_kube_of_simulated_ray: RealKube
) -> AsyncIterator[ObservedKube]:
    client, real = dev_server_env.client, real_kube_of_simulated_ray
    worker_user = f"system:serviceaccount:{NAMESPACE}:{WORKER_ACCOUNT}"
    api_client = config.new_client_from_config(config_file=str(real.admin))
    with contextlib.closing(api_client):
        yield ObservedKube(
            client,
            api_client,
            lambda queue: kubeconfig_worker(client, real.installed.worker, queue),
            # The worker's own in the namespace: KubeRay's operator and the controllers read the same kinds,
            # and observers of other modules' namespaces may still be watching theirs.
            lambda namespace: _followed(audited_requests(real.audit_log, worker_user, namespace)),
        )


def _manifests(namespace: str, copies: int, entrypoint: str) -> list[dict[str, Any]]:
    """`copies` RayJobs of each mode; SidecarMode's job outlasts the head's readiness delay."""
    sidecar = OUTLASTS_THE_HEADS_READINESS_DELAY.format(code=0)
    return [
        example(
            mode,
            namespace,
            rename=f"{mode.removeprefix('rayjob-')}-{index}",
            entrypoint=sidecar if mode == "rayjob-sidecarmode" else entrypoint,
        )
        for index in range(copies)
        for mode in MODES
    ]


def _why(result: dict[str, Any]) -> dict[str, Any]:
    """What says why a RayJob did not succeed (pytest cuts a whole status short)."""
    return {key: result.get(key) for key in ("rayClusterName", "jobId", "reason", "message", "rayJobInfo")}


def _container_logs(api_client: k8s.ApiClient, namespace: str, cluster_name: str) -> dict[str, str]:
    """The end of each container log of the RayCluster's Pods (a SidecarMode submitter's says why)."""
    core = k8s.CoreV1Api(api_client)
    logs: dict[str, str] = {}
    for pod in core.list_namespaced_pod(namespace, label_selector=f"ray.io/cluster={cluster_name}").items:
        for container in pod.spec.containers:
            name = pod.metadata.name
            try:
                logs[f"{name}/{container.name}"] = core.read_namespaced_pod_log(
                    name, namespace, container=container.name, tail_lines=30
                )
            except k8s.ApiException as error:  # a container that never started has no log
                logs[f"{name}/{container.name}"] = f"no log: {error.reason}"
    return logs


async def _activity_types(handle: WorkflowHandle[Any, Any]) -> tuple[Counter[str], Counter[Any]]:
    history = await handle.fetch_history()
    scheduled = Counter(
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    )
    return scheduled, Counter(event.event_type for event in history.events)


async def test_one_observer_serves_every_kubernetes_wait_of_a_namespace(kube: ObservedKube) -> None:
    client = kube.client
    async with kube.worker(None) as task_queue:
        stack = kube.stack(task_queue)
        namespace = stack.namespace()
        before = kube.followed_requests(namespace)
        handles = [await stack.start(manifest) for manifest in _manifests(namespace, 2, "sleep 2")]
        results = await asyncio.wait_for(asyncio.gather(*(handle.result() for handle in handles)), 180)
        requests = kube.followed_requests(namespace) - before
        histories = [await _activity_types(handle) for handle in handles]
        observers = [
            execution.id
            async for execution in client.list_workflows(f"WorkflowType = '{KUBE_OBSERVER_WORKFLOW}'")
            if execution.task_queue == task_queue
        ]

    for result in results:
        assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), {
            **_why(result),
            "containerLogs": _container_logs(kube.api_client, namespace, result.get("rayClusterName") or "-"),
        }
    assert observers == [kube_observer_workflow_id(task_queue, namespace)]
    # Six RayJobs, each with its own RayCluster (three with a submitter to watch): the watches and lists of
    # the followed kinds are the observer's few, not one per RayJob and wait.
    for kind in FOLLOWED:
        made = sum(count for key, count in requests.items() if key.endswith(f" {kind}"))
        assert 1 <= made <= 2 * REQUESTS_PER_KIND, requests
    for scheduled, _ in histories:
        assert not [name for name in scheduled if name.startswith("k8s.wait_")], scheduled
    # A K8sJobMode lifecycle: its RayCluster's readiness and the submitter's end arrive as signals (at least
    # one each), with no wait activity; the acts are local activity markers.
    k8s_job_mode_kinds = histories[1][1]
    assert k8s_job_mode_kinds[EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED] >= 2, k8s_job_mode_kinds

    assert sum(k8s_job_mode_kinds.values()) <= TYPICAL_K8S_JOB_MODE_EVENTS, k8s_job_mode_kinds


async def test_a_worker_restart_loses_no_kubernetes_change(kube: ObservedKube) -> None:
    task_queue = f"test-{uuid.uuid4()}"
    async with kube.worker(task_queue):
        stack = kube.stack(task_queue)
        namespace = stack.namespace()
        handles = [await stack.start(manifest) for manifest in _manifests(namespace, 1, "sleep 6")]

        async def all_registered() -> bool:
            statuses = [await stack.status(handle) for handle in handles]
            return all(
                status.get("jobDeploymentStatus") in ("Initializing", "Running") for status in statuses
            )

        await wait_until(all_registered, within=60, interval=0.3, what="every RayJob waiting")
    # The worker and its observer activity are gone while clusters get ready and submitters finish.
    async with kube.worker(task_queue):
        results = await asyncio.wait_for(asyncio.gather(*(handle.result() for handle in handles)), 150)

    for result in results:
        assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), {
            **_why(result),
            "containerLogs": _container_logs(kube.api_client, namespace, result.get("rayClusterName") or "-"),
        }
