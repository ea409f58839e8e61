"""A RayJob outlives its run (issue 22): a completed run records whether it holds its finished object, a run
started again with a used id takes over a finished object instead of repeating it (reading its earlier run
with its configuration: one local activity), the objects a run creates name the run that created them, and an
identical `apply` keeps the generation."""

from __future__ import annotations

import json
import uuid
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from models.manifest import parse_rayjob
from models.naming import ANNOTATION_RAYJOB_UID
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start, until_phase
from raypilot.testing.rayjob_world import RUNS_FOREVER, FakeWorld
from tests.workflows.rayjob.rayjob_support import FakeWorker, completed_run
from wire import names
from wire.kubernetes import EarlierRun
from workflows.decisions.rayjob.object import rayjob_spec_hash

FINISHED_STATUS = {
    "jobId": "earlier-abcde",
    "jobStatus": "SUCCEEDED",
    "jobDeploymentStatus": "Complete",
    "rayClusterName": "earlier-xyzzy",
    "startTime": "2026-01-01T00:00:00Z",
    "endTime": "2026-01-01T00:01:00Z",
    "succeeded": 1,
    "failed": 0,
}


async def test_a_finished_run_records_that_it_holds_its_object_and_names_its_objects(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld()
    manifest = rayjob_manifest(name="memo", mode="K8sJobMode")
    handle, result = await completed_run(time_skipping_env, fake_worker, world, manifest)
    memo = await (await handle.describe()).memo()
    assert result["jobDeploymentStatus"] == "Complete"
    assert memo == {
        "raypilot.io/outcome": "finished",
        "raypilot.io/generation": 1,
        "raypilot.io/spec-hash": rayjob_spec_hash(parse_rayjob(manifest)),
    }
    # Every object names this run, so a later run of the same RayJob never adopts it.
    created = [*world.clusters.values(), *world.jobs.values(), *world.services.values()]
    uids = {obj["metadata"]["annotations"][ANNOTATION_RAYJOB_UID] for obj in created}
    assert uids == {handle.result_run_id}
    assert [call for call, _ in world.calls if call == names.LATEST_EARLIER_RUN] == [names.LATEST_EARLIER_RUN]


async def test_a_run_takes_over_the_finished_object_of_an_earlier_run_without_side_effects(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(earlier_run=EarlierRun("run-1", "COMPLETED", "finished", 3, "h", dict(FINISHED_STATUS)))
    handle, result = await completed_run(time_skipping_env, fake_worker, world, rayjob_manifest(name="again"))
    memo = await (await handle.describe()).memo()
    assert result == FINISHED_STATUS
    assert memo == {
        "raypilot.io/outcome": "finished",
        "raypilot.io/generation": 3,
        "raypilot.io/spec-hash": "h",
        "raypilot.io/inherited-from": "run-1",
    }
    assert [call for call, _ in world.calls] == [names.LATEST_EARLIER_RUN]
    assert world.clusters == world.jobs == world.services == {}
    assert world.events == []


async def test_a_deleted_or_failed_earlier_run_leaves_nothing_to_take_over(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    for index, earlier in enumerate(
        [
            EarlierRun("run-1", "COMPLETED", "deleted", 1, "h", dict(FINISHED_STATUS)),
            EarlierRun("run-1", "FAILED"),
            EarlierRun("run-1", "TERMINATED"),
        ]
    ):
        world = FakeWorld(earlier_run=earlier)
        _, result = await completed_run(
            time_skipping_env, fake_worker, world, rayjob_manifest(name=f"anew-{index}")
        )
        assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), earlier
        assert result["jobId"] != FINISHED_STATUS["jobId"]
        assert world.submissions == 1


async def test_apply_of_the_same_spec_keeps_the_generation_and_delete_records_deleted(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    # On the dev server: the `delete` at the end cancels a running wait (see test_handlers.py).
    client = dev_server_env.client
    world = FakeWorld(job_scripts=[RUNS_FOREVER], patience=30)
    manifest = rayjob_manifest(f"gen-{uuid.uuid4().hex[:6]}")
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, manifest, queue)
        await until_phase(handle, "Running")
        same = await handle.execute_update("apply", manifest)
        relabelled = rayjob_manifest(manifest["metadata"]["name"])
        relabelled["metadata"]["labels"] = {"team": "a"}
        metadata_only = await handle.execute_update("apply", relabelled)
        changed = rayjob_manifest(manifest["metadata"]["name"], entrypoint="python other.py")
        spec_changed = await handle.execute_update("apply", changed)
        await handle.execute_update("delete")
        await handle.result()
        memo = await (await handle.describe()).memo()
    assert (same, metadata_only, spec_changed) == ({"generation": 1}, {"generation": 1}, {"generation": 2})
    assert memo["raypilot.io/outcome"] == "deleted"
    assert memo["raypilot.io/generation"] == 2


async def local_activity_types(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The activity type of each local activity marker in the run's history, in order."""
    types = []
    async for event in handle.fetch_history_events():
        marker = event.marker_recorded_event_attributes
        if marker.marker_name == "core_local_activity":
            types.append(json.loads(marker.details["data"].payloads[0].data)["activity_type"])
    return types


async def test_a_run_reads_its_configuration_and_earlier_run_with_one_local_activity(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld()
    handle, _ = await completed_run(time_skipping_env, fake_worker, world, rayjob_manifest(name="one-read"))
    types = await local_activity_types(handle)
    assert types[:2] == [names.READ_RUN_START, names.CREATE_RAYCLUSTER]
    assert names.READ_OPERATOR_CONFIG not in types
    assert names.LATEST_EARLIER_RUN not in types
    # The creates posted their own Events: no local activity of their own.
    assert names.RECORD_EVENT not in types
    assert world.event_reasons() == ["CreatedRayCluster", "CreatedService"]
