"""Logs after teardown on fake activities under time skipping: a failed RayJob's driver log is saved before
its cluster is deleted (shutdownAfterJobFinishes with no TTL deletes it at once), its tail lands in the
DriverLogSaved condition and Event, the log itself never in history; a RayJob that succeeds asks nothing,
unless the worker keeps a log store."""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.operator import OperatorConfig
from raypilot.testing.rayjob_activities import FakeActivities
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FAILS, SUCCEEDS, FakeWorld
from tests.workflows.rayjob.rayjob_support import FakeWorker, completed_run, with_fakes
from wire import names
from wire.driver_log import STATUS_TAIL, DriverLogSaved, SaveDriverLog, log_tail
from workflows.decisions.rayjob.driver_log import DRIVER_LOG_CONDITION, REASON_NOT_SAVED, REASON_TAIL_SAVED
from workflows.rayjob.driver_log import DRIVER_LOG_PATCH
from workflows.search_attributes import MEMO_DRIVER_LOG

LOG = "".join(f"step {number:05d} of the first attempt\n" for number in range(2000)) + "ValueError: boom\n"


def _manifest() -> dict[str, Any]:
    return rayjob_manifest(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=0)


def _condition(result: dict[str, Any]) -> dict[str, Any]:
    [condition] = [c for c in result.get("conditions", []) if c["type"] == DRIVER_LOG_CONDITION]
    return condition


async def _history_bytes(handle: WorkflowHandle[Any, Any]) -> bytes:
    """Every event of the run's history as serialized, payloads raw (JSON) inside."""
    return b"".join(event.SerializeToString() for event in (await handle.fetch_history()).events)


async def test_a_failed_jobs_log_is_saved_before_its_cluster_is_deleted(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS])
    clusters_at_save: list[list[str]] = []
    fake_save = FakeActivities(world).save_driver_log

    @activity.defn(name=names.SAVE_DRIVER_LOG)
    async def save_driver_log(request: SaveDriverLog) -> DriverLogSaved:
        clusters_at_save.append(sorted(world.clusters))
        world.driver_logs[request.submission_id] = LOG
        saved: DriverLogSaved = await fake_save(request)
        return saved

    async with fake_worker(time_skipping_env.client, activities=with_fakes(world, save_driver_log)) as queue:
        handle = await start(time_skipping_env.client, _manifest(), queue)
        result: dict[str, Any] = await handle.result()
        events: list[dict[str, str]] = await handle.query("events")

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Failed", "FAILED")
    cluster = result["rayClusterName"]
    # Saved while the cluster was there; deleted right after (TTL 0).
    assert clusters_at_save == [[cluster]]
    assert cluster not in world.clusters
    [request] = world.saved_driver_logs
    assert (request.submission_id, request.namespace, request.name) == (result["jobId"], "default", "sample")
    assert request.target.head_service == f"{cluster}-head-svc"
    reasons = [event["reason"] for event in events]
    assert reasons.index("DriverLogSaved") < reasons.index("DeletedRayCluster")
    posted = [event for event in world.events if event.reason == "DriverLogSaved"]
    assert len(posted) == 1
    assert posted[0].message.endswith("ValueError: boom")
    condition = _condition(result)
    assert (condition["status"], condition["reason"]) == ("True", REASON_TAIL_SAVED)
    assert condition["message"].endswith("\n" + log_tail(LOG, STATUS_TAIL))
    # The tail entered history (the act's answer), the log's head did not; and the patch of this act.
    history = await _history_bytes(handle)
    assert b"ValueError: boom" in history
    assert b"step 00000 of the first attempt" not in history
    assert DRIVER_LOG_PATCH.encode() in history


async def test_a_retried_attempt_saves_the_failed_attempts_log_then_runs_again(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS, SUCCEEDS])
    _, result = await completed_run(time_skipping_env, fake_worker, world, rayjob_manifest(backoffLimit=1))
    assert (result["jobDeploymentStatus"], result["failed"], result["succeeded"]) == ("Complete", 1, 1)
    [request] = world.saved_driver_logs
    assert request.submission_id != result["jobId"]  # the first attempt's
    assert _condition(result)["message"].startswith(f"Ray job {request.submission_id}:")


async def test_a_save_that_fails_is_said_in_the_condition_and_the_rayjob_goes_on(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS])

    @activity.defn(name=names.SAVE_DRIVER_LOG)
    async def save_driver_log(request: SaveDriverLog) -> DriverLogSaved:
        raise ApplicationError("dashboard: HTTP 403: forbidden", type="DashboardRejected", non_retryable=True)

    async with fake_worker(time_skipping_env.client, activities=with_fakes(world, save_driver_log)) as queue:
        handle = await start(time_skipping_env.client, _manifest(), queue)
        result: dict[str, Any] = await handle.result()
    assert result["jobDeploymentStatus"] == "Failed"
    assert result["rayClusterName"] not in world.clusters
    condition = _condition(result)
    assert (condition["status"], condition["reason"]) == ("False", REASON_NOT_SAVED)
    assert "HTTP 403: forbidden" in condition["message"]


async def test_a_job_that_succeeds_saves_nothing_and_asks_no_patch(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[SUCCEEDS])
    handle, result = await completed_run(time_skipping_env, fake_worker, world, _manifest())
    assert result["jobDeploymentStatus"] == "Complete"
    assert world.saved_driver_logs == []
    assert "conditions" not in result
    assert DRIVER_LOG_PATCH.encode() not in await _history_bytes(handle)


async def test_with_a_log_store_a_succeeded_jobs_log_is_kept_before_its_cluster_is_deleted(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[SUCCEEDS], config=OperatorConfig(keeps_driver_logs=True))
    clusters_at_save: list[list[str]] = []
    fake_save = FakeActivities(world).save_driver_log

    @activity.defn(name=names.SAVE_DRIVER_LOG)
    async def save_driver_log(request: SaveDriverLog) -> DriverLogSaved:
        clusters_at_save.append(sorted(world.clusters))
        saved: DriverLogSaved = await fake_save(request)
        return saved

    async with fake_worker(time_skipping_env.client, activities=with_fakes(world, save_driver_log)) as queue:
        handle = await start(time_skipping_env.client, _manifest(), queue)
        result: dict[str, Any] = await handle.result()
    assert result["jobDeploymentStatus"] == "Complete"
    assert clusters_at_save == [[result["rayClusterName"]]]
    assert result["rayClusterName"] not in world.clusters
    [request] = world.saved_driver_logs
    assert request.submission_id == result["jobId"]
    assert _condition(result)["message"].startswith(f"Ray job {result['jobId']}:")


async def test_a_raypilot_io_rayjob_tells_the_controller_of_its_saved_log_in_its_memo(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    """The condition changes no printer column: the memo the controller lists beside the phase does."""
    world = FakeWorld(job_scripts=[FAILS])
    manifest = _manifest()
    # As the controller hands over a raypilot.io object.
    manifest["metadata"]["uid"] = "uid-object"
    manifest["metadata"]["annotations"] = {"raypilot.io/object-api-version": "raypilot.io/v1"}
    handle, result = await completed_run(time_skipping_env, fake_worker, world, manifest)
    memo = await (await handle.describe()).memo()
    assert memo[MEMO_DRIVER_LOG] == f"{result['jobId']}/{REASON_TAIL_SAVED}"
    plain, _ = await completed_run(
        time_skipping_env, fake_worker, FakeWorld(job_scripts=[FAILS]), _manifest()
    )
    assert MEMO_DRIVER_LOG not in await (await plain.describe()).memo()
