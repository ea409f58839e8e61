"""RayJobWorkflow's handlers and what they drive: validation at start, `apply` (suspend and resume, the
interactive job id, rejected manifests, generations), `delete`, and clusterSelector mode.

Tests that steer a running workflow poll queries in real time and give the fake waits a long patience, so a
wait blocks until the fake world changes instead of retrying. Those that cancel a running wait while a local
activity changes what it watches run on the dev server: the time-skipping test server rejects a
cancellation of an activity that completed during the same workflow task (ACTIVITY_UNKNOWN), which a real
server accepts."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from temporalio.client import WithStartWorkflowOperation, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.features import FeatureGates
from models.operator import OperatorConfig
from raypilot.testing.rayjob_scenarios import (
    eventually,
    rayjob_manifest,
    shared_cluster,
    start,
    status_of,
    until_phase,
    workflow_id,
)
from raypilot.testing.rayjob_world import RUNS_FOREVER, SUCCEEDS, FakeWorld
from wire import names
from workflows.rayjob.workflow import RayJobWorkflow

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
STEERED = 30.0  # patience of the fake waits when a test steers the workflow by hand


def _unique(name: str) -> str:
    """A RayJob name of its own: the dev server is shared by the whole session."""
    return f"{name}-{uuid.uuid4().hex[:6]}"


def _invalid(manifest: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(manifest)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (
            _invalid(rayjob_manifest(), ("spec", "suspend"), True),
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed "
            "to be suspended",
        ),
        (
            rayjob_manifest(activeDeadlineSeconds=0),
            "The RayJob spec is invalid: activeDeadlineSeconds must be a positive integer",
        ),
        (
            rayjob_manifest(rayClusterSpec=None),
            "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set",
        ),
        (_invalid(rayjob_manifest(), ("spec", "colour"), "blue"), 'unknown field "spec.colour"'),
        (
            rayjob_manifest(mode="Teleport"),
            'spec.submissionMode: unsupported value "Teleport": expected one of K8sJobMode, HTTPMode, '
            "InteractiveMode, SidecarMode",
        ),
        (["not", "a", "manifest"], "a manifest must be a mapping (an object), got a list"),
    ],
)
async def test_an_invalid_manifest_fails_at_once_and_creates_nothing(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, manifest: Any, message: str
) -> None:
    world = FakeWorld()
    client = time_skipping_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await client.start_workflow(
            RayJobWorkflow.run, manifest, id="rayjob/default/bad", task_queue=queue
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        status = await status_of(handle)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.message, cause.non_retryable) == ("ValidationFailed", message, True)
    assert (status["jobDeploymentStatus"], status["reason"], status["message"]) == (
        "ValidationFailed",
        "ValidationFailed",
        message,
    )
    assert world.calls == []
    assert world.events == []


async def test_deletion_strategy_is_invalid_when_its_feature_gate_is_off(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(config=OperatorConfig(feature_gates=FeatureGates(ray_job_deletion_policy=False)))
    rules = {"deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}]}
    client = time_skipping_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, rayjob_manifest(deletionStrategy=rules), queue)
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    assert isinstance(failure.value.cause, ApplicationError)
    assert (
        failure.value.cause.message
        == "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
    )
    # Valid with every gate on, so the run read its configuration and its earlier run together (patch
    # rayjob-one-start-read): a look at Temporal, nothing created. A manifest no configuration accepts
    # looks at nothing (test_an_invalid_manifest_fails_at_once_and_creates_nothing).
    assert [call for call, _ in world.calls] == [names.LATEST_EARLIER_RUN]
    assert world.events == []


async def test_apply_rejects_invalid_or_mismatched_manifests_and_counts_generations(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[RUNS_FOREVER], patience=STEERED)
    name = _unique("apply")
    manifest = rayjob_manifest(name)
    client = dev_server_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, manifest, queue)
        await until_phase(handle, "Running")
        rejected = {
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed "
            "to be suspended": _invalid(manifest, ("spec", "suspend"), True),
            f"metadata.name is immutable: the object is '{name}', the manifest names 'other'": _invalid(
                manifest, ("metadata", "name"), "other"
            ),
            'unknown field "spec.colour"': _invalid(manifest, ("spec", "colour"), "blue"),
        }
        for message, bad in rejected.items():
            with pytest.raises(WorkflowUpdateFailedError) as failure:
                await handle.execute_update("apply", bad)
            assert isinstance(failure.value.cause, ApplicationError)
            assert (failure.value.cause.type, failure.value.cause.message) == ("ValidationFailed", message)
        same = await handle.execute_update("apply", manifest)
        changed = await handle.execute_update("apply", rayjob_manifest(name, activeDeadlineSeconds=3600))
        again = await handle.execute_update("apply", rayjob_manifest(name, activeDeadlineSeconds=3600))
        status = await status_of(handle)
        await handle.execute_update("delete")
    assert (same, changed, again) == ({"generation": 1}, {"generation": 2}, {"generation": 2})
    assert status["jobDeploymentStatus"] == "Running"


async def test_apply_with_start_starts_the_workflow_or_updates_it(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[RUNS_FOREVER], patience=STEERED)
    client = dev_server_env.client
    name = _unique("upsert")
    manifest = rayjob_manifest(name)

    async with fake_worker(client, activities=world.activities()) as queue:

        async def apply(applied: dict[str, Any]) -> Any:
            operation = WithStartWorkflowOperation(
                RayJobWorkflow.run,
                applied,
                id=workflow_id(applied),
                task_queue=queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
            return await client.execute_update_with_start_workflow(
                RayJobWorkflow.apply, applied, start_workflow_operation=operation
            )

        first = await apply(manifest)
        second = await apply(rayjob_manifest(name, entrypoint="python other.py"))
        handle = client.get_workflow_handle(workflow_id(manifest))
        await handle.execute_update("delete")
    assert (first, second) == ({"generation": 1}, {"generation": 2})


async def test_suspend_while_running_releases_everything_and_resume_starts_over(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[RUNS_FOREVER, SUCCEEDS], patience=STEERED)
    name = _unique("suspend")
    manifest = rayjob_manifest(name, mode="K8sJobMode", shutdownAfterJobFinishes=True)
    client = dev_server_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, manifest, queue)
        running = await until_phase(handle, "Running")
        await handle.execute_update("apply", _invalid(manifest, ("spec", "suspend"), True))
        suspended = await until_phase(handle, "Suspended")
        clusters_while_suspended = dict(world.clusters)
        jobs_while_suspended = dict(world.jobs)
        await handle.execute_update("apply", manifest)
        result = await handle.result()

    assert running["rayClusterName"] not in clusters_while_suspended
    assert jobs_while_suspended == {}
    assert (
        suspended.get("jobId", "")
        == suspended.get("rayClusterName", "")
        == suspended.get("jobStatus", "")
        == ""
    )
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert result["rayClusterName"] != running["rayClusterName"]
    # The suspension's deletions, cluster first; what was created before them (a create retried on a loaded
    # machine records its event again) is not this test's subject.
    reasons = world.event_reasons()
    first_deletion = reasons.index("DeletedRayCluster")
    assert not any(reason.startswith("Deleted") for reason in reasons[:first_deletion])
    assert reasons[first_deletion : first_deletion + 2] == ["DeletedRayCluster", "DeletedRayJobSubmitter"]


async def test_suspending_waits_for_a_finalizer_to_let_the_cluster_go(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[RUNS_FOREVER], patience=STEERED)
    manifest = rayjob_manifest(_unique("finalizer"), shutdownAfterJobFinishes=True)
    client = dev_server_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, manifest, queue)
        cluster = (await until_phase(handle, "Running"))["rayClusterName"]
        world.finalizers.add(cluster)
        await handle.execute_update("apply", _invalid(manifest, ("spec", "suspend"), True))
        await until_phase(handle, "Suspending")

        async def deletion_asked() -> bool:
            return bool(world.clusters[cluster]["metadata"].get("deletionTimestamp"))

        await eventually(deletion_asked)
        # A suspend flipped back now does not interrupt Suspending (atomic), nor does the cluster's lingering.
        await handle.execute_update("apply", manifest)
        await asyncio.sleep(0.5)
        still = await status_of(handle)
        world.release_finalizer(cluster)
        await until_phase(handle, "Running")
        await handle.execute_update("delete")
    assert still["jobDeploymentStatus"] == "Suspending"
    assert cluster not in world.clusters


async def test_a_job_created_suspended_creates_nothing_until_resumed(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(patience=STEERED)
    manifest = rayjob_manifest(shutdownAfterJobFinishes=True)
    client = time_skipping_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, _invalid(manifest, ("spec", "suspend"), True), queue)
        await until_phase(handle, "Suspended")
        created_while_suspended = world.called(names.CREATE_RAYCLUSTER)
        await handle.execute_update("apply", manifest)
        result = await handle.result()
    assert created_while_suspended == []
    assert result["jobDeploymentStatus"] == "Complete"


async def test_interactive_mode_waits_for_the_users_job_id(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(patience=STEERED)
    manifest = rayjob_manifest(mode="InteractiveMode")
    client = time_skipping_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, manifest, queue)
        waiting = await until_phase(handle, "Waiting")
        world.add_ray_job("my-job", SUCCEEDS)
        await handle.execute_update("apply", rayjob_manifest(mode="InteractiveMode", jobId="my-job"))
        result = await handle.result()
    assert waiting.get("jobId", "") == ""
    assert waiting["dashboardURL"].endswith(":8265")
    assert (result["jobDeploymentStatus"], result["jobId"], result["jobStatus"]) == (
        "Complete",
        "my-job",
        "SUCCEEDED",
    )
    assert world.called(names.SUBMIT_JOB) == []


async def test_delete_stops_the_ray_job_and_deletes_what_the_workflow_created(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[RUNS_FOREVER], patience=STEERED)
    client = dev_server_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, rayjob_manifest(_unique("delete"), mode="K8sJobMode"), queue)
        await until_phase(handle, "Running")
        deleted = await handle.execute_update("delete")
        result = await handle.result()
    [stop] = world.called(names.STOP_JOB)
    assert stop.submission_id == result["jobId"]
    assert world.ray_jobs[result["jobId"]].status == "STOPPED"
    [owned] = world.called(names.DELETE_OWNED_OBJECTS)
    assert "RayCluster" in owned.kinds
    assert (world.clusters, world.jobs, world.services) == ({}, {}, {})
    assert deleted["jobDeploymentStatus"] == result["jobDeploymentStatus"] == "Running"


async def test_cluster_selector_uses_the_named_cluster_and_never_touches_it(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(patience=STEERED)
    manifest = rayjob_manifest(rayClusterSpec=None, clusterSelector={"ray.io/cluster": "shared"})
    client = time_skipping_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, manifest, queue)

        async def reported_missing() -> bool:
            events = await handle.query("events")
            return any(event["reason"] == "RayClusterNotFound" for event in events)

        await eventually(reported_missing)
        world.clusters["shared"] = shared_cluster()
        result = await handle.result()
    assert (result["jobDeploymentStatus"], result["rayClusterName"]) == ("Complete", "shared")
    assert result["dashboardURL"] == "shared-head-svc.default.svc.cluster.local:8265"
    assert world.called(names.CREATE_RAYCLUSTER) == []
    assert world.called(names.DELETE_RAYCLUSTER) == []
    assert world.called(names.CREATE_SERVICE) == []
    assert world.clusters["shared"]["metadata"].get("deletionTimestamp") is None
    assert world.event_reasons()[0] == "RayClusterNotFound"
