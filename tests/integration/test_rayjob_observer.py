"""The cluster observer end to end (real worker as its ServiceAccount, real activities, the real stack with
simulated Ray, the dev server): one observer serves every RayJob of a shared RayCluster, the dashboard sees
one list per tick instead of one GET per job (its own request counter, read through the API server), and a
worker restart (the observer activity retried on the new worker) loses no job's end."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from bench.jobs_support import SHARED_CLUSTER, selector_rayjob
from models.naming import head_service_name
from sandbox.testing import raycluster_manifest, wait_until
from tests.integration.rayjob_support import create_raycluster, head_pod_name, job_reads
from tests.integration.stack import Stack
from tests.kubes import RealKube
from wire.observer import DEFAULT_OBSERVER_SHARDS, OBSERVER_WORKFLOW, observer_shard, observer_workflow_id

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(180)]

JOBS = 6
# A tick is one second: the observer lists once per tick, whatever the number of jobs (plus a few lists
# around a restart).
LIST_SLACK = 5
# The old path's same lifecycle had 3 events more per change of the job's view (a wait activity's scheduled,
# started and completed, against one signal); 40 leaves room for a workflow task per change.
TYPICAL_EVENTS = 40


@pytest.fixture(autouse=True)
def observer_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The observer is opt-in; the workers of this module read the setting from this process's environment."""
    monkeypatch.setenv("RAYPILOT_JOB_OBSERVER", "true")


@contextlib.asynccontextmanager
async def worker_stack(kube: RealKube, client: Client, task_queue: str | None = None) -> AsyncIterator[Stack]:
    """A worker as raypilot's ServiceAccount (on `task_queue`, or one of its own), for the block."""
    async with kube.admin_and_worker(client, task_queue) as (api_client, queue):
        yield Stack(client, queue, api_client)


async def _start_jobs(stack: Stack, namespace: str, entrypoint: str) -> list[WorkflowHandle[Any, Any]]:
    await create_raycluster(stack, raycluster_manifest(SHARED_CLUSTER, namespace, workers=0))
    return [await stack.start(selector_rayjob(namespace, f"obs-{i}", entrypoint)) for i in range(JOBS)]


async def _all_running(stack: Stack, handles: list[WorkflowHandle[Any, Any]]) -> bool:
    statuses = [await stack.status(handle) for handle in handles]
    return all(status.get("jobStatus") == "RUNNING" for status in statuses)


async def test_one_observer_serves_every_rayjob_of_a_cluster(
    real_kube_of_simulated_ray: RealKube, dev_server_env: WorkflowEnvironment
) -> None:
    client = dev_server_env.client
    async with worker_stack(real_kube_of_simulated_ray, client) as stack:
        task_queue = stack.task_queue
        namespace = stack.namespace()
        handles = await _start_jobs(stack, namespace, "sleep 4")
        head = head_pod_name(stack, namespace, SHARED_CLUSTER)
        before = await job_reads(stack, namespace, head)
        started = time.monotonic()
        results = await asyncio.gather(*(handle.result() for handle in handles))
        elapsed = time.monotonic() - started
        reads = await job_reads(stack, namespace, head)
        reads.subtract(before)
        shard = observer_shard(head_service_name(SHARED_CLUSTER), DEFAULT_OBSERVER_SHARDS)
        observer_id = observer_workflow_id(task_queue, namespace, shard)
        kinds = Counter(event.event_type for event in (await handles[0].fetch_history()).events)
        observers = [
            execution
            async for execution in client.list_workflows(f"WorkflowType = '{OBSERVER_WORKFLOW}'")
            if execution.task_queue == task_queue
        ]
    for result in results:
        assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    # One observer for the namespace's clusters, whatever the number of RayJobs.
    assert {execution.id for execution in observers} == {observer_id}
    # The jobs were read by the list, once per tick for all of them: no job's own GET while they ran.
    assert reads["/api/jobs/{job_id}"] == 0, reads
    assert 1 <= reads["/api/jobs/"] <= elapsed + LIST_SLACK, (reads, elapsed)
    # A typical lifecycle's history (HTTPMode on a selected cluster, PENDING -> RUNNING -> SUCCEEDED): no
    # wait activity at all, one signal per change of the Ray job's view that the workflow saw (at most the
    # three states; a state shorter than a tick is never seen), the acts as local activity markers.
    assert kinds[EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED] == 0, kinds
    assert 1 <= kinds[EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED] <= 3, kinds
    assert sum(kinds.values()) <= TYPICAL_EVENTS, kinds


async def test_a_worker_restart_loses_no_job_end(
    real_kube_of_simulated_ray: RealKube, dev_server_env: WorkflowEnvironment
) -> None:
    client = dev_server_env.client
    task_queue = f"test-{uuid.uuid4()}"
    async with worker_stack(real_kube_of_simulated_ray, client, task_queue) as stack:
        namespace = stack.namespace()
        handles = await _start_jobs(stack, namespace, "sleep 8")
        await wait_until(lambda: _all_running(stack, handles), within=60, interval=0.3, what="all RUNNING")
    # The worker is gone (its observer activity with it) while every job runs; they end meanwhile or soon.
    async with worker_stack(real_kube_of_simulated_ray, client, task_queue):
        results = await asyncio.wait_for(asyncio.gather(*(handle.result() for handle in handles)), 120)
    for result in results:
        assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
