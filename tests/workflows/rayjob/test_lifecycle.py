"""RayJobWorkflow end to end on fake activities: each submission mode's happy path, what it creates, what it
tells Kubernetes and the Web UI, and what it costs in history events."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import (
    eventually,
    history_event_count,
    history_event_types,
    rayjob_manifest,
    start,
    status_of,
)
from raypilot.testing.rayjob_world import RUNS_FOREVER, FakeWorld
from tests.workflows.rayjob.rayjob_support import FakeWorker, completed_run
from wire import names
from wire.kubernetes import CreateObject
from workflows.search_attributes import RAY_KIND, RAY_NAME, RAY_NAMESPACE, RAY_PHASE

HTTP_MODE_BUDGET = 60
K8S_JOB_MODE_BUDGET = 80


async def _run(
    env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    world: FakeWorld,
    manifest: dict[str, Any],
    sandboxed: bool = False,
) -> tuple[dict[str, Any], int, list[dict[str, str]]]:
    """Runs the workflow to its end; returns its result, its history length and its `events` query."""
    client = env.client
    async with fake_worker(client, activities=world.activities(), sandboxed=sandboxed) as queue:
        handle = await start(client, manifest, queue)
        result: dict[str, Any] = await handle.result()
        count = await history_event_count(handle)
        events: list[dict[str, str]] = await handle.query("events")
    return result, count, events


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {var["name"]: var.get("value", "") for var in container.get("env") or []}


async def test_http_mode_job_runs_to_complete_and_its_cluster_is_shut_down(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    """In Temporal's sandbox, as one RayJob lifecycle of the suite (raypilot/testing/worker.py)."""
    world = FakeWorld()
    manifest = rayjob_manifest(shutdownAfterJobFinishes=True)
    result, count, events = await _run(time_skipping_env, fake_worker, world, manifest, sandboxed=True)

    assert result["jobDeploymentStatus"] == "Complete"
    assert result["jobStatus"] == "SUCCEEDED"
    assert (result["succeeded"], result["failed"]) == (1, 0)
    cluster_name, job_id = result["rayClusterName"], result["jobId"]
    assert cluster_name.startswith("sample-")
    assert len(cluster_name) == len("sample-") + 5
    assert job_id.startswith("sample-")
    assert job_id != cluster_name
    assert result["dashboardURL"] == f"{cluster_name}-head-svc.default.svc.cluster.local:8265"
    assert result["startTime"] <= result["endTime"]
    assert set(result["rayJobInfo"]) == {"startTime", "endTime"}
    # The submission carries the deterministic submission id; the cluster is gone, the head Service stays.
    [submission] = world.called(names.SUBMIT_JOB)
    assert submission.request["submission_id"] == job_id
    assert submission.request["entrypoint"] == "python -c 'print(42)'"
    assert cluster_name not in world.clusters
    assert "sample-head-svc" in world.services
    assert [event["reason"] for event in events] == [
        "CreatedRayCluster",
        "CreatedService",
        "DeletedRayCluster",
    ]
    assert world.event_reasons() == [event["reason"] for event in events]
    assert events[0]["message"] == f"Created RayCluster default/{cluster_name}"
    assert count <= HTTP_MODE_BUDGET


async def test_created_objects_carry_ownership_labels_and_the_workflow_id(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld()
    manifest = rayjob_manifest(mode="K8sJobMode")
    manifest["metadata"]["labels"] = {"team": "a"}
    await _run(time_skipping_env, fake_worker, world, manifest)

    created: list[CreateObject] = [
        *world.called(names.CREATE_RAYCLUSTER),
        *world.called(names.CREATE_JOB),
        *world.called(names.CREATE_SERVICE),
    ]
    assert len(created) == 3
    for stored in [*world.clusters.values(), *world.jobs.values(), *world.services.values()]:
        labels = stored["metadata"]["labels"]
        assert labels["ray.io/originated-from-cr-name"] == "sample"
        assert labels["ray.io/originated-from-crd"] == "RayJob"
        assert labels["app.kubernetes.io/created-by"] == "raypilot"
        assert stored["metadata"]["annotations"]["raypilot.io/workflow-id"] == "rayjob/default/sample"
    [cluster] = world.clusters.values()
    assert cluster["metadata"]["labels"]["team"] == "a"
    assert cluster["metadata"]["labels"]["ray.io/job-submission-mode"] == "K8sJobMode"


async def test_k8s_job_mode_runs_a_submitter_job_and_completes_when_it_finishes(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld()
    result, count, events = await _run(
        time_skipping_env,
        fake_worker,
        world,
        rayjob_manifest(mode="K8sJobMode", shutdownAfterJobFinishes=True),
    )

    assert (result["jobDeploymentStatus"], result["jobStatus"], result["succeeded"]) == (
        "Complete",
        "SUCCEEDED",
        1,
    )
    submitter = world.jobs["sample"]
    assert submitter["spec"]["backoffLimit"] == 2
    container = submitter["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "ray-job-submitter"
    env = _env(container)
    assert env["RAY_JOB_SUBMISSION_ID"] == result["jobId"]
    assert env["RAY_DASHBOARD_ADDRESS"] == result["dashboardURL"]
    assert env["PYTHONUNBUFFERED"] == "1"
    assert "--submission-id " + result["jobId"] in container["args"][0]
    # The submitter Job is kept (its logs); only the cluster goes.
    assert result["rayClusterName"] not in world.clusters
    assert [event["reason"] for event in events] == [
        "CreatedRayCluster",
        "CreatedRayJobSubmitter",
        "CreatedService",
        "DeletedRayCluster",
    ]
    assert events[1]["message"] == "Created Kubernetes Job default/sample"
    assert count <= K8S_JOB_MODE_BUDGET


async def test_sidecar_mode_submits_from_the_head_pod(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld()
    result, _, _ = await _run(time_skipping_env, fake_worker, world, rayjob_manifest(mode="SidecarMode"))

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    [cluster] = world.clusters.values()
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never"
    assert [c["name"] for c in head["containers"]] == ["ray-head", "ray-job-submitter"]
    assert _env(head["containers"][1])["RAY_JOB_SUBMISSION_ID"] == result["jobId"]
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    assert world.jobs == {}


@pytest.mark.parametrize(
    ("mode", "budget"), [("HTTPMode", HTTP_MODE_BUDGET), ("K8sJobMode", K8S_JOB_MODE_BUDGET)]
)
async def test_history_does_not_grow_with_the_job_duration(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, mode: str, budget: int
) -> None:
    manifest = rayjob_manifest(mode=mode, shutdownAfterJobFinishes=True)
    short_handle, short_count = await _run_counted(time_skipping_env, fake_worker, FakeWorld(), {**manifest})
    short_work = await _work_events(short_handle)
    manifest["metadata"]["name"] = "long"
    long_world = FakeWorld(job_duration=timedelta(hours=1))
    long_handle, long_count = await _run_counted(time_skipping_env, fake_worker, long_world, manifest)

    job_info = (await long_handle.result())["rayJobInfo"]
    assert job_info["endTime"] > job_info["startTime"]
    # The same activities and timers whatever the duration. How many workflow tasks carry them depends on
    # how completions happen to batch on a loaded machine, so those are only held to the budget.
    assert _same_work(await _work_events(long_handle), short_work)
    assert short_count <= budget
    assert long_count <= budget


# In K8sJobMode the fake submitter Job ends at the instant its Ray job does. Both reports usually reach the
# workflow in one task; when a loaded machine splits them, the workflow waits on the grace-period timer for
# the submitter (started, then cancelled) and looks at the job once more when it ends (one marker).
_SPLIT_ENDINGS = Counter(
    {"EVENT_TYPE_TIMER_STARTED": 1, "EVENT_TYPE_TIMER_CANCELED": 1, "EVENT_TYPE_MARKER_RECORDED": 1}
)


def _same_work(one: Counter[str], other: Counter[str]) -> bool:
    """Equal, or apart by exactly the split endings of one run (either run)."""
    return one == other or one == other + _SPLIT_ENDINGS or other == one + _SPLIT_ENDINGS


async def _run_counted(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: FakeWorld, manifest: dict[str, Any]
) -> tuple[WorkflowHandle[Any, Any], int]:
    handle, _ = await completed_run(env, fake_worker, world, manifest)
    return handle, await history_event_count(handle)


async def _work_events(handle: WorkflowHandle[Any, Any]) -> Counter[str]:
    """How many events of each type the history has, without the workflow-task bookkeeping."""
    kinds = await history_event_types(handle)
    return Counter(kind for kind in kinds if not kind.startswith("EVENT_TYPE_WORKFLOW_TASK"))


async def test_web_ui_search_attributes_and_details(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld()
    handle, _ = await completed_run(time_skipping_env, fake_worker, world, rayjob_manifest(name="ui"))
    described = await handle.describe()
    upserts = [
        event
        async for event in handle.fetch_history_events()
        if "RayPhase"
        in event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
    ]
    attributes = described.typed_search_attributes
    assert attributes.get(RAY_KIND) == "RayJob"
    assert attributes.get(RAY_NAMESPACE) == "default"
    assert attributes.get(RAY_NAME) == "ui"
    assert attributes.get(RAY_PHASE) == "Complete"
    # One upsert per phase: Initializing, Running, Complete (the SDK adds its own for each workflow.patched:
    # TemporalChangeVersion).
    assert len(upserts) == 3


async def test_status_query_follows_a_running_job(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    # On the dev server: the `delete` at the end cancels a running wait (see test_handlers.py).
    client = dev_server_env.client
    world = FakeWorld(job_scripts=[RUNS_FOREVER], patience=30)
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, rayjob_manifest(f"query-{uuid.uuid4().hex[:6]}"), queue)

        async def running() -> bool:
            status = await status_of(handle)
            return status.get("jobStatus") == "RUNNING"

        await eventually(running)
        status = await status_of(handle)
        await handle.execute_update("delete")
    assert status["jobDeploymentStatus"] == "Running"
    assert status["rayClusterStatus"]["state"] == "ready"
    assert status["message"] == "Job is running"


async def test_a_raypilot_io_object_is_the_owner_and_the_subject_of_events(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    """Issue #17: the controller hands over a raypilot.io/v1 object with its uid; what the workflow creates is
    owned by that object (garbage-collected with it) and its Events point at it."""
    world = FakeWorld()
    manifest = rayjob_manifest(mode="K8sJobMode")
    manifest["metadata"]["uid"] = "0b5e2b1e-1111-4c7a-9d55-1d2a3b4c5d6e"
    manifest["metadata"]["annotations"] = {"raypilot.io/object-api-version": "raypilot.io/v1"}
    await _run(time_skipping_env, fake_worker, world, manifest)

    created: list[CreateObject] = [*world.called(names.CREATE_RAYCLUSTER), *world.called(names.CREATE_JOB)]
    owners = {(c.owner.api_version, c.owner.kind, c.owner.uid) for c in created if c.owner is not None}
    assert owners == {("raypilot.io/v1", "RayJob", "0b5e2b1e-1111-4c7a-9d55-1d2a3b4c5d6e")}
    assert len([c for c in created if c.owner is not None]) == len(created)
    subjects = {(e.involved.api_version, e.involved.uid) for e in world.events}
    assert subjects == {("raypilot.io/v1", "0b5e2b1e-1111-4c7a-9d55-1d2a3b4c5d6e")}
