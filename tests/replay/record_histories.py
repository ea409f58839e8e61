"""Records the histories the replay test replays: typical runs of both workflows on their fake activities.

Run by hand from the repository root (pytest does not collect it):

    .venv/bin/python -m tests.replay.record_histories            # every scenario
    .venv/bin/python -m tests.replay.record_histories rayjob_http_shutdown

Each scenario runs on a fresh time-skipping test server and writes `histories/<scenario>.json`. The
committed histories were recorded with the 1.0 baseline: every workflow as released, with no patch. Re-record
only on purpose: a history is a promise that runs started by the released code still replay. When the replay
test fails after a workflow change, the change broke that promise: guard it with `workflow.patched(...)`
(keeping the old path for recorded runs) rather than re-recording; re-record when a run that no deployed
worker can have in flight is all that differs (the next release folds its patches), or to add a scenario.
"""

from __future__ import annotations

import asyncio
import copy
import json
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
from raypilot.testing.kubernetes_observer_world import FakeKubernetesObserver
from raypilot.testing.observer_world import FakeObserver
from raypilot.testing.rayjob_scenarios import rayjob_manifest, shared_cluster, start
from raypilot.testing.rayjob_world import FAILS, RUNS_FOREVER, SUCCEEDS, FakeWorld
from raypilot.testing.rayservice_scenarios import (
    Handle,
    eventually,
    incremental_manifest,
    rayservice_manifest,
    running_rayservice,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.replay import save_history
from raypilot.testing.time_skipping import start_time_skipping_env
from raypilot.testing.worker import running_worker
from sandbox.testing import wait_until
from tests.workflows.raycronjob.fakes_raycronjob import FakeCronJobWorld, cronjob_manifest, finished_run
from tests.workflows.rayjob.test_frontdoor import adopted_manifest, kuberay_world
from tests.workflows.rayservice.fakes_gates import FAILING, HEALTHY, GatedWorld
from tests.workflows.rayservice.upgrade_support import only_cluster_left, promoted_to
from wire import names
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
    """The job observer's path (RAYPILOT_JOB_OBSERVER on): an HTTPMode RayJob
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


async def rayjob_observer_k8s_ordered(env: WorkflowEnvironment) -> Handle:
    """The observer's path with ordered job views: a K8sJobMode RayJob
    learns its Ray job's status from `observed` signals and its submitter's end from the submitter wait
    (then one direct look, which later views are ordered against)."""
    world = FakeWorld(config=OperatorConfig(job_observer=True))
    observer = FakeObserver(world, env.client)
    try:
        with env.auto_time_skipping_disabled():
            async with running_worker(env.client, activities=observer.activities()) as queue:
                handle = await start(env.client, rayjob_manifest(name="ordered", mode="K8sJobMode"), queue)
                await handle.result()
    finally:
        await observer.stop()
    return handle


async def rayjob_k8s_observer(env: WorkflowEnvironment) -> Handle:
    """The Kubernetes observer's path (RAYPILOT_JOB_OBSERVER on): a K8sJobMode
    RayJob learns that its RayCluster is ready and that its submitter Job finished from `k8s_observed`
    signals (and its Ray job's status from `observed` ones)."""
    world = FakeWorld(config=OperatorConfig(job_observer=True), clusters_become_ready=False)
    observer = FakeObserver(world, env.client)
    k8s_observer = FakeKubernetesObserver(world, env.client)
    try:
        with env.auto_time_skipping_disabled():
            activities = k8s_observer.replace(observer.activities())
            async with running_worker(env.client, activities=activities) as queue:
                manifest = rayjob_manifest(name="k8s-observed", mode="K8sJobMode")
                handle = await start(env.client, manifest, queue)
                # The cluster gets ready only once the RayJob waits for it through the observer.
                watch = await wait_until(
                    lambda: next(iter(world.called(names.WATCH_K8S_OBJECT)), None),
                    within=30,
                    what="the RayCluster's registration",
                )
                world.make_ready(watch.name)
                await handle.result()
    finally:
        await observer.stop()
        await k8s_observer.stop()
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
    """The earlier-run check finds nothing, the job runs (K8sJobMode, cluster deleted
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


async def raycronjob_tick(env: WorkflowEnvironment) -> Handle:
    """Issue 20: one tick of a RayCronJob's schedule runs its RayJob (a real RayJobWorkflow, HTTPMode, on the
    fake world) as a child with the contract's id, then prunes the oldest finished RayJob beyond the limit.
    Started as by hand (no nominal time in its id, which replays do not keep: the replay's id is the file's
    name), so the tick's scheduled time is its start in workflow time; the commands are the same."""
    world = FakeWorld()
    cron_world = FakeCronJobWorld(env.client, runs=[finished_run(29926900), finished_run(29926901)])
    cronjob = cronjob_manifest(annotations={"raypilot.io/schedule": "successfulJobsHistoryLimit: 2"})
    cronjob["spec"]["jobTemplate"] = rayjob_manifest(shutdownAfterJobFinishes=True)["spec"]
    activities = [*world.activities(), *cron_world.activities()]
    async with running_worker(env.client, activities=activities) as queue:
        handle = await env.client.start_workflow(
            "RayCronJobTick", cronjob, id="raycronjob/jobs/nightly", task_queue=queue
        )
        await handle.result()
    return handle


async def rayjob_leftover_cleanup(env: WorkflowEnvironment) -> Handle:
    """Issue 16, no silent leaks: activeDeadlineSeconds fails a RayJob whose Ray job still runs; its rules
    match only SUCCEEDED/FAILED, so a Warning and a condition are recorded and raypilot.io/cleanup-after
    deletes the cluster 60 s after the end."""
    world = FakeWorld(job_scripts=[RUNS_FOREVER])
    rules = [
        {"policy": "DeleteCluster", "condition": {"jobStatus": status, "ttlSeconds": 0}}
        for status in ("SUCCEEDED", "FAILED")
    ]
    manifest = rayjob_manifest(
        name="leftover", activeDeadlineSeconds=30, deletionStrategy={"deletionRules": rules}
    )
    manifest["metadata"]["annotations"] = {"raypilot.io/cleanup-after": "60s"}
    async with running_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        await handle.result()
    return handle


async def rayjob_retry_policy(env: WorkflowEnvironment) -> Handle:
    """Issue 16, retries that fit the failure: a runtime_env setup failure retried after a 30 s back-off on a
    new cluster, then a supervisor start failure retried on the same cluster, then success."""
    world = FakeWorld(
        job_scripts=[FAILS, FAILS, SUCCEEDS],
        job_error_types=["RUNTIME_ENV_SETUP_FAILURE", "JOB_SUPERVISOR_ACTOR_START_FAILURE", ""],
    )
    policy = {
        "classes": {
            "RuntimeEnvSetup": {"backoff": {"initial": "30s"}},
            "SupervisorStart": {"sameCluster": True},
        }
    }
    manifest = rayjob_manifest(name="retries", backoffLimit=2, shutdownAfterJobFinishes=True)
    manifest["metadata"]["annotations"] = {"raypilot.io/retry-policy": json.dumps(policy)}
    async with running_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        await handle.result()
    return handle


async def rayjob_admission_queue(env: WorkflowEnvironment) -> Handle:
    """Issue 16, queueing on a shared cluster: two clusterSelector RayJobs on a cluster limited to one; the
    second waits in the queue until the first completes (the history is the second one's)."""
    from activities.admission import AdmissionActivities
    from activities.dependencies import ActivityDependencies
    from activities.registry import activity_methods

    world = FakeWorld(job_duration=timedelta(minutes=5))
    cluster = shared_cluster()
    cluster["metadata"]["annotations"] = {"raypilot.io/max-concurrent-jobs": "1"}
    world.clusters["shared"] = cluster
    admission = AdmissionActivities(ActivityDependencies.from_env({}, temporal_client=env.client))
    selector = {"rayClusterSpec": None, "clusterSelector": {"ray.io/cluster": "shared"}}
    activities = world.activities() + activity_methods(admission)
    async with running_worker(env.client, activities=activities) as queue:
        first = await start(env.client, rayjob_manifest("first", **selector), queue)

        async def first_admitted() -> bool:
            return bool((await status_of(first)).get("conditions"))

        await eventually(env, first_admitted)
        second = await start(env.client, rayjob_manifest("second", **selector), queue)
        await first.result()
        await second.result()
    return second


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


async def rayservice_none_not_applied(env: WorkflowEnvironment) -> Handle:
    """With strategy None a cluster spec change is reported as not
    applied (condition and Warning Event), the cluster left alone; then delete."""
    world = FakeRayWorld()
    strategy = {"type": "None"}
    async with running_rayservice(env, world, rayservice_manifest(strategy=strategy)) as handle:
        await until_ready(env, handle)
        await handle.execute_update("apply", rayservice_manifest(version="v2", strategy=strategy))

        async def reported() -> bool:
            conditions = (await status_of(handle)).get("conditions") or []
            return any(c.get("type") == "ClusterSpecNotApplied" for c in conditions)

        await eventually(env, reported)
        await handle.execute_update("delete")
        await handle.result()
    return handle


async def rayservice_in_place_restart(env: WorkflowEnvironment) -> Handle:
    """raypilot.io/in-place-restart with strategy None: the spec written to the cluster, its worker group's
    Pods then the head restarted, Serve submitted again after the head."""
    world = FakeRayWorld()

    def manifest(version: str) -> dict[str, Any]:
        return rayservice_manifest(
            version=version, strategy={"type": "None"}, annotations={"raypilot.io/in-place-restart": "true"}
        )

    async with running_rayservice(env, world, manifest("v1")) as handle:
        await until_ready(env, handle)
        await handle.execute_update("apply", manifest("v2"))

        async def finished() -> bool:
            conditions = (await status_of(handle)).get("conditions") or []
            return any(c.get("type") == "InPlaceRestart" and c.get("status") == "False" for c in conditions)

        await eventually(env, finished)
    return handle


async def _upgrade_to_half_the_traffic(
    env: WorkflowEnvironment, world: FakeRayWorld, handle: Handle, upgrade: dict[str, Any]
) -> str:
    """Once the incremental upgrade's route exists, applies `upgrade`; the new cluster once it has 50 %."""

    async def routed() -> bool:
        return world.route is not None

    await eventually(env, routed)
    await handle.execute_update("apply", upgrade)
    return await _pending_cluster(env, handle, min_traffic=50)


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
        new = await _upgrade_to_half_the_traffic(env, world, handle, _two_step_incremental("v2"))
        await handle.execute_update("pause")
        await env.sleep(timedelta(minutes=1))
        await handle.execute_update("resume")
        await eventually(env, promoted_to(handle, new))
        await until_ready(env, handle)
    return handle


async def rayservice_incremental_third_spec(env: WorkflowEnvironment) -> Handle:
    """A third spec (cluster and Serve config) applied
    after the first traffic step rolls back to the original cluster, which keeps its Serve config, then
    upgrades to the third spec on a fresh cluster."""
    world = FakeRayWorld()

    def spec(version: str) -> dict[str, Any]:
        manifest = _two_step_incremental(version)
        manifest["spec"]["serveConfigV2"] = manifest["spec"]["serveConfigV2"].replace(
            "app:deployment", f"app:{version}"
        )
        return manifest

    async with running_rayservice(env, world, spec("v1")) as handle:
        first = (await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"]
        second = await _upgrade_to_half_the_traffic(env, world, handle, spec("v2"))
        await handle.execute_update("apply", spec("v3"))

        async def third_serves() -> bool:
            status = await status_of(handle)
            active = status["activeServiceStatus"]["rayClusterName"]
            pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
            return active not in (first, second) and not pending

        await eventually(env, third_serves)
        await until_ready(env, handle)
    return handle


async def rayservice_rollout_plan(env: WorkflowEnvironment) -> Handle:
    """An incremental upgrade walks its raypilot.io/rollout plan (10 %, a 30 s
    pause, 50 % with an indefinite pause), is resumed, and runs to its end."""
    world = FakeRayWorld()

    def spec(version: str) -> dict[str, Any]:
        manifest = _two_step_incremental(version)
        plan = {"steps": [{"traffic": 10}, {"pause": "30s"}, {"traffic": 50, "pause": "indefinite"}]}
        manifest["metadata"]["annotations"] = {"raypilot.io/rollout": json.dumps(plan)}
        return manifest

    async with running_rayservice(env, world, spec("v1")) as handle:
        await until_ready(env, handle)
        new = await _upgrade_to_half_the_traffic(env, world, handle, spec("v2"))
        await env.sleep(timedelta(minutes=1))
        await handle.execute_update("resume")
        await eventually(env, promoted_to(handle, new))
        await until_ready(env, handle)
    return handle


async def _upgrade_rolled_back(
    env: WorkflowEnvironment,
    world: FakeRayWorld,
    handle: Handle,
    upgrade: dict[str, Any],
    new_serve_mode: str,
) -> None:
    """Applies `upgrade` once ready; its new cluster's Serve stays `new_serve_mode`: waits until the upgrade
    was rolled back (only the old cluster left, serving)."""
    old = (await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"]
    world.serve_mode_for_new_clusters = new_serve_mode
    await handle.execute_update("apply", upgrade)
    await eventually(env, only_cluster_left(world, old))
    await until_ready(env, handle)


async def rayservice_progress_deadline(env: WorkflowEnvironment) -> Handle:
    """raypilot.io/rollout progressDeadlineSeconds: a NewCluster upgrade whose new cluster never serves is
    aborted at the deadline; the old cluster keeps serving."""
    world = FakeRayWorld()
    rollout = {"raypilot.io/rollout": json.dumps({"progressDeadlineSeconds": 60})}
    async with running_rayservice(env, world, rayservice_manifest(annotations=rollout)) as handle:
        v2 = rayservice_manifest(version="v2", annotations=rollout)
        await _upgrade_rolled_back(env, world, handle, v2, new_serve_mode="deploying")
    return handle


async def rayservice_unhealthy_rollback(env: WorkflowEnvironment) -> Handle:
    """raypilot.io/rollout onUnhealthy (Abort by default): an incremental upgrade whose new cluster's Serve
    application is DEPLOY_FAILED rolls back at once."""
    world = FakeRayWorld()

    def spec(version: str) -> dict[str, Any]:
        manifest = _two_step_incremental(version)
        manifest["metadata"]["annotations"] = {"raypilot.io/rollout": json.dumps({"onUnhealthy": "Abort"})}
        return manifest

    async with running_rayservice(env, world, spec("v1")) as handle:
        await _upgrade_rolled_back(env, world, handle, spec("v2"), new_serve_mode="failed")
    return handle


async def rayservice_drained_deletion(env: WorkflowEnvironment) -> Handle:
    """With raypilot.io/max-drain-seconds the old cluster of a blue-green
    upgrade is read past its deletion delay, held while it has requests in flight, then deleted."""
    return await _drained_blue_green(env, {"raypilot.io/max-drain-seconds": "300"})


async def rayservice_drained_by_default(env: WorkflowEnvironment) -> Handle:
    """Without raypilot.io/max-drain-seconds (drained by default, patch rayservice-drain-by-default) the old
    cluster of a blue-green upgrade is read past its deletion delay, held while it has requests in flight,
    then deleted."""
    return await _drained_blue_green(env, {})


async def _drained_blue_green(env: WorkflowEnvironment, annotations: dict[str, str]) -> Handle:
    """A blue-green upgrade whose old cluster answers 2 requests in flight for two readings, then none."""
    world = FakeRayWorld()

    def spec(version: str) -> dict[str, Any]:
        return rayservice_manifest(version=version, deletion_delay=30, annotations=annotations or None)

    async with running_rayservice(env, world, spec("v1")) as handle:
        old = (await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"]
        world.in_flight[old] = 2
        await handle.execute_update("apply", spec("v2"))
        await _pending_cluster(env, handle)
        await until_ready(env, handle)

        async def read_twice() -> bool:
            return len(world.in_flight_reads) >= 2

        await eventually(env, read_twice)
        world.in_flight[old] = 0

        async def old_deleted() -> bool:
            return old not in world.clusters

        await eventually(env, old_deleted)
    return handle


async def rayservice_analysis_gates(env: WorkflowEnvironment) -> Handle:
    """A blue-green upgrade whose new cluster passes its pre-promotion HTTP
    probe, is switched to, fails its post-promotion probe and is switched back from (the old cluster kept,
    the new one deleted after its delay)."""
    world = GatedWorld()
    rollout = {
        "analyses": [{"name": "probe", "http": {"samples": 20, "minSuccessRate": 0.95}}],
        "prePromotionAnalysis": "probe",
        "postPromotionAnalysis": "probe",
    }

    def spec(version: str) -> dict[str, Any]:
        annotations = {"raypilot.io/rollout": json.dumps(rollout)}
        return rayservice_manifest(version=version, deletion_delay=5, annotations=annotations)

    async with running_rayservice(env, world, spec("v1")) as handle:
        old = (await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"]
        world.sample_queue = [HEALTHY, FAILING]  # before the switch, after it
        await handle.execute_update("apply", spec("v2"))

        async def only_old() -> bool:
            return len(world.probes) == 2 and world.live_clusters() == [old]

        await eventually(env, only_old)
        await until_ready(env, handle)
    return handle


async def rayjob_adopted_from_kuberay(env: WorkflowEnvironment) -> Handle:
    """A raypilot.io RayJob adopted from KubeRay continues its running Ray job on KubeRay's cluster and
    publishes its jobStatus in its memo."""
    world = kuberay_world()
    async with running_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, adopted_manifest(), queue)
        await handle.result()
    return handle


async def rayservice_undo_in_place(env: WorkflowEnvironment) -> Handle:
    """A blue-green upgrade v1 -> v2, then `undo` inside the deletion delay
    moves the traffic back to v1's cluster (no new cluster); v2's cluster is deleted after the delay."""
    world = FakeRayWorld()
    async with running_rayservice(env, world, rayservice_manifest(deletion_delay=30)) as handle:
        old = (await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"]
        await handle.execute_update("apply", rayservice_manifest(version="v2", deletion_delay=30))
        new = await _pending_cluster(env, handle)
        await eventually(env, promoted_to(handle, new), step=timedelta(milliseconds=500))
        await handle.execute_update("undo", {})

        async def back_and_v2_gone() -> bool:
            status = await status_of(handle)
            return status["activeServiceStatus"]["rayClusterName"] == old and new not in world.clusters

        await eventually(env, back_and_v2_gone)
    return handle


async def rayservice_header_canary(env: WorkflowEnvironment) -> Handle:
    """An incremental upgrade paused by its plan before any traffic, with the
    header rule and the pending cluster's first capacity step, then aborted (the rule goes)."""
    world = FakeRayWorld()
    canary = {"name": "x", "value": "1"}
    rollout = {"steps": [{"pause": "indefinite"}, {"traffic": 100}], "headerCanary": canary}

    def manifest(version: str) -> dict[str, Any]:
        body = _two_step_incremental(version)
        body["metadata"]["annotations"] = {"raypilot.io/rollout": json.dumps(rollout)}
        return body

    async with running_rayservice(env, world, manifest("v1")) as handle:
        await until_ready(env, handle)
        await handle.execute_update("apply", manifest("v2"))

        async def canary_rule() -> bool:
            return world.route is not None and len(world.route["spec"]["rules"]) == 2

        await eventually(env, canary_rule, step=timedelta(milliseconds=500))
        await handle.execute_update("abort")

        async def rolled_back() -> bool:
            return not ((await status_of(handle)).get("pendingServiceStatus") or {}).get("rayClusterName")

        await eventually(env, rolled_back, step=timedelta(milliseconds=500))
    return handle


SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (
        rayjob_http_shutdown,
        rayjob_k8s_deletion_rules,
        rayjob_outcome_memo,
        rayjob_inherits_finished,
        rayjob_leftover_cleanup,
        rayjob_retry_policy,
        rayjob_admission_queue,
        rayjob_observer_http,
        rayjob_adopted_from_kuberay,
        rayjob_observer_k8s_ordered,
        rayjob_k8s_observer,
        rayservice_blue_green_delete,
        rayservice_incremental_pause_resume,
        raycronjob_tick,
        rayservice_none_not_applied,
        rayservice_incremental_third_spec,
        rayservice_in_place_restart,
        rayservice_rollout_plan,
        rayservice_progress_deadline,
        rayservice_unhealthy_rollback,
        rayservice_drained_deletion,
        rayservice_drained_by_default,
        rayservice_analysis_gates,
        rayservice_undo_in_place,
        rayservice_header_canary,
    )
}


async def record(name: str) -> Path:
    env = await start_time_skipping_env(pydantic_data_converter)
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
