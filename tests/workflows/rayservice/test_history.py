"""RayServiceWorkflow's history stays bounded: continue-as-new carries a spec that is still being rolled out
(and the Serve-config cache), and a RayService idle for a day adds almost nothing to its history."""

from __future__ import annotations

from datetime import timedelta

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    WORKFLOW_ID,
    condition_of,
    eventually,
    rayservice_manifest,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import apply, pending_of, serving, status_when
from workflows.rayservice.state import RayServiceState


async def current_run(env: WorkflowEnvironment) -> tuple[str, int]:
    described = await env.client.get_workflow_handle(WORKFLOW_ID).describe()
    return described.run_id or "", described.history_length


async def test_continue_as_new_carries_a_spec_still_being_rolled_out(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    manifest = rayservice_manifest(deletion_delay=5)
    knob = RayServiceState(manifest=manifest, continue_as_new_at_history_length=60)
    async with serving(env, world, manifest, carried=knob) as (handle, first):
        world.serve_mode_for_new_clusters = "deploying"
        upgrade = rayservice_manifest(version="v2", deletion_delay=5)
        await apply(handle, upgrade)
        status = await status_when(env, handle, lambda status: bool(pending_of(status)))
        pending = status["pendingServiceStatus"]["rayClusterName"]
        run_at_apply, _ = await current_run(env)
        # Serve on the pending cluster keeps changing (never ready) until the workflow continued as new.
        modes = ["failed", "deploying"]
        while (await current_run(env))[0] == run_at_apply:
            world.clusters[pending].serve_mode = modes[0]
            modes.reverse()
            await env.sleep(timedelta(seconds=30))
        world.clusters[pending].serve_mode = "running"
        final = await until_ready(env, handle)

        async def old_cluster_deleted() -> bool:
            return first not in world.clusters

        await eventually(env, old_cluster_deleted)
    assert final["activeServiceStatus"]["rayClusterName"] == pending
    assert final["observedGeneration"] == 2
    head = world.clusters[pending].body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["env"] == [{"name": "APP_VERSION", "value": "v2"}]
    # The Serve-config cache travelled too: neither cluster got its config twice.
    assert sorted(act.name for act in world.acts("put")) == sorted([first, pending])
    assert len(world.acts("create", "RayCluster")) == 2


async def test_a_rayservice_idle_for_a_day_adds_at_most_50_history_events(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    world.unchanged_retry = timedelta(minutes=10)
    async with serving(env, world, rayservice_manifest()) as (handle, _):
        await env.sleep(timedelta(minutes=1))
        run, before = await current_run(env)
        await env.sleep(timedelta(hours=24))
        after_run, after = await current_run(env)
        status = await status_of(handle)
        described = await handle.describe()
    assert after_run == run
    assert after - before <= 50
    assert condition_of(status, "Ready") == ("True", "NonZeroServeEndpoints")
    pending = [activity.activity_type.name for activity in described.raw_description.pending_activities]
    assert pending == ["dashboard.wait_serve"]
