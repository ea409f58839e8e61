"""Records the histories the replay test replays: typical runs of both workflows on their fake activities.

Run by hand from the repository root (pytest does not collect it):

    .venv/bin/python -m tests.replay.record_histories            # every scenario
    .venv/bin/python -m tests.replay.record_histories rayjob_http_shutdown

Each scenario runs on a fresh time-skipping test server and writes `histories/<scenario>.json`. Re-record
only on purpose: a history is a promise that runs started by the old code still replay. When the replay
test fails after a workflow change, the change broke that promise: guard it with `workflow.patched(...)`
(keeping the old path for recorded runs) rather than re-recording; re-record when a run that no deployed
worker can have in flight is all that differs, or to add a scenario.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from models.operator import OperatorConfig
from raypilot.search_attributes import ensure_search_attributes
from raypilot.testing.binaries import temporal_test_server
from raypilot.testing.replay import save_history
from raypilot.testing.worker import running_worker
from tests.workflows.fake_observer import FakeObserver
from tests.workflows.fakes_rayjob import FakeWorld
from tests.workflows.fakes_rayjob_manifests import rayjob_manifest, start
from tests.workflows.fakes_rayservice import (
    FakeRayWorld,
    Handle,
    eventually,
    incremental_manifest,
    rayservice_manifest,
    running_rayservice,
    status_of,
    until_ready,
)
from wire.kubernetes import EarlierRun

HISTORIES = Path(__file__).parent / "histories"
Scenario = Callable[[WorkflowEnvironment], Awaitable[Handle]]


async def rayjob_http_shutdown(env: WorkflowEnvironment) -> Handle:
    """HTTPMode happy path; shutdownAfterJobFinishes deletes the cluster 60 s after the end."""
    world = FakeWorld()
    manifest = rayjob_manifest(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=60)
    async with running_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        await handle.result()
    return handle


async def rayjob_observer_http(env: WorkflowEnvironment) -> Handle:
    """The job observer's path (patch rayjob-job-observer, RAYPILOT_JOB_OBSERVER on): an HTTPMode RayJob
    registers with its cluster's observer and learns its Ray job's status from `observed` signals."""
    world = FakeWorld(config=OperatorConfig(job_observer=True))
    observer = FakeObserver(world, env.client)
    try:
        # The fake observer is no activity: without skipping, time does not jump past the signals it sends.
        with env.auto_time_skipping_disabled():
            async with running_worker(env.client, activities=observer.activities()) as queue:
                handle = await start(env.client, rayjob_manifest(name="observed"), queue)
                await handle.result()
    finally:
        await observer.stop()
    return handle


async def rayjob_k8s_deletion_rules(env: WorkflowEnvironment) -> Handle:
    """K8sJobMode happy path; staged deletionRules: workers at once, the cluster after 30 s, the RayJob
    after 60 s."""
    world = FakeWorld()
    rules = [
        {"policy": policy, "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": ttl}}
        for policy, ttl in (("DeleteWorkers", 0), ("DeleteCluster", 30), ("DeleteSelf", 60))
    ]
    manifest = rayjob_manifest(mode="K8sJobMode", deletionStrategy={"deletionRules": rules})
    async with running_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        await handle.result()
    return handle


async def rayjob_outcome_memo(env: WorkflowEnvironment) -> Handle:
    """Issue 22's patches: the earlier-run check finds nothing, the job runs (K8sJobMode, cluster deleted
    at once) and the run records its outcome in its memo."""
    world = FakeWorld()
    manifest = rayjob_manifest(name="outcome", mode="K8sJobMode", shutdownAfterJobFinishes=True)
    async with running_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        await handle.result()
    return handle


async def rayjob_inherits_finished(env: WorkflowEnvironment) -> Handle:
    """Issue 22: a run started again with a used id takes over the earlier run's finished RayJob."""
    finished = {"jobId": "inherit-abcde", "jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Complete"}
    world = FakeWorld(earlier_run=EarlierRun("run-1", "COMPLETED", "finished", 1, "h", finished))
    async with running_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, rayjob_manifest(name="inherit"), queue)
        await handle.result()
    return handle


async def _pending_cluster(env: WorkflowEnvironment, handle: Handle, min_traffic: int = 0) -> str:
    found = ""

    async def started() -> bool:
        nonlocal found
        pending = (await status_of(handle)).get("pendingServiceStatus") or {}
        found = str(pending.get("rayClusterName") or "")
        return bool(found) and int(pending.get("trafficRoutedPercent") or 0) >= min_traffic

    await eventually(env, started, step=timedelta(milliseconds=500))
    return found


async def rayservice_blue_green_delete(env: WorkflowEnvironment) -> Handle:
    """First deployment, a blue-green (NewCluster) upgrade until the old cluster is deleted, then delete."""
    world = FakeRayWorld()
    async with running_rayservice(env, world, rayservice_manifest(deletion_delay=30)) as handle:
        old = (await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"]
        await handle.execute_update("apply", rayservice_manifest(version="v2", deletion_delay=30))
        await _pending_cluster(env, handle)
        await until_ready(env, handle)

        async def old_deleted() -> bool:
            return old not in world.clusters

        await eventually(env, old_deleted)
        await handle.execute_update("delete")
        await handle.result()
    return handle


def _two_step_incremental(version: str) -> dict[str, Any]:
    """An incremental upgrade in two traffic steps of 50 % (the history stays small)."""
    manifest = copy.deepcopy(incremental_manifest(version))  # it shares the strategy dict of the fakes
    options = manifest["spec"]["upgradeStrategy"]["clusterUpgradeOptions"]
    options.update(stepSizePercent=50, maxSurgePercent=50)
    return manifest


async def rayservice_incremental_pause_resume(env: WorkflowEnvironment) -> Handle:
    """An incremental upgrade paused after its first traffic step, resumed, and run to its end."""
    world = FakeRayWorld()
    async with running_rayservice(env, world, _two_step_incremental("v1")) as handle:
        await until_ready(env, handle)

        async def routed() -> bool:
            return world.route is not None

        await eventually(env, routed)
        await handle.execute_update("apply", _two_step_incremental("v2"))
        new = await _pending_cluster(env, handle, min_traffic=50)
        await handle.execute_update("pause")
        await env.sleep(timedelta(minutes=1))
        await handle.execute_update("resume")

        async def promoted() -> bool:
            return bool((await status_of(handle))["activeServiceStatus"]["rayClusterName"] == new)

        await eventually(env, promoted)
        await until_ready(env, handle)
    return handle


SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (
        rayjob_http_shutdown,
        rayjob_k8s_deletion_rules,
        rayjob_outcome_memo,
        rayjob_inherits_finished,
        rayjob_observer_http,
        rayservice_blue_green_delete,
        rayservice_incremental_pause_resume,
    )
}


async def record(name: str) -> Path:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=temporal_test_server(), data_converter=pydantic_data_converter
    )
    try:
        await ensure_search_attributes(env.client, env.client.namespace)
        handle = await SCENARIOS[name](env)
        path = HISTORIES / f"{name}.json"
        await save_history(handle, path)
        return path
    finally:
        await env.shutdown()


async def main(names: list[str]) -> None:
    for name in names or list(SCENARIOS):
        path = await record(name)
        print(f"{path.name}: {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    # The fake waits end with a retryable "nothing changed yet" error by design; the worker logs each one.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)
    logging.getLogger("temporalio.worker._activity").setLevel(logging.ERROR)
    asyncio.run(main(sys.argv[1:]))
