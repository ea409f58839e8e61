"""raypilot.io/rollout onUnhealthy on the fake world (time-skipping server): a new cluster whose Serve
application is DEPLOY_FAILED is rolled back at once (Abort, the default), or said so while the upgrade keeps
waiting (Wait); without the annotation the upgrade waits, as in KubeRay."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import condition_of, eventually, status_of
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    apply,
    assert_rolled_back,
    promoted_to,
    rolled_back_to,
    rollout_manifest,
    serving,
    stuck_rollout_upgrade,
)


async def test_a_failed_new_cluster_is_rolled_back_at_once(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"steps": [{"traffic": 10}, {"pause": "indefinite"}]}
    async with stuck_rollout_upgrade(env, world, rollout, "failed") as (handle, old):
        await eventually(env, rolled_back_to(world, handle, old), step=timedelta(milliseconds=500))
        final = await status_of(handle)
    message = assert_rolled_back(final, world, old, "RolloutProgressing", "NewClusterUnhealthy")
    assert "Serve applications: app DEPLOY_FAILED" in message
    assert "rolling back to the active cluster (onUnhealthy: Abort)" in message


async def test_wait_keeps_the_upgrade_waiting(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"onUnhealthy": "Wait"}
    async with stuck_rollout_upgrade(env, world, rollout, "failed", incremental=False) as (handle, old):

        async def said_so() -> bool:
            return condition_of(await status_of(handle), "RolloutProgressing")[1] == "NewClusterUnhealthy"

        await eventually(env, said_so)
        new = (await status_of(handle))["pendingServiceStatus"]["rayClusterName"]
        assert sorted(world.live_clusters()) == sorted([old, new])
        world.clusters[new].serve_mode = "running"  # Serve recovered
        await eventually(env, promoted_to(handle, new))
    assert [e.type for e in world.events if e.reason == "NewClusterUnhealthy"] == ["Warning"]


async def test_traffic_goes_back_to_the_old_cluster_at_once(time_skipping_env: WorkflowEnvironment) -> None:
    """At 50 % (the old cluster already down to 50 % capacity) v2 fails: capacity first, then all traffic
    back, without waiting intervalSeconds between steps of stepSizePercent as a reverted spec does."""
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"steps": [{"traffic": 50}, {"pause": "10m"}]}
    async with serving(env, world, rollout_manifest("v1", rollout)) as (handle, old):
        await apply(handle, rollout_manifest("v2", rollout))

        async def old_at_half_capacity() -> bool:
            active = (await status_of(handle))["activeServiceStatus"]
            return active.get("targetCapacity") == 50 and active.get("trafficRoutedPercent") == 50

        await eventually(env, old_at_half_capacity, step=timedelta(milliseconds=500))
        new = (await status_of(handle))["pendingServiceStatus"]["rayClusterName"]
        since = len(world.log)
        world.clusters[new].serve_mode = "failed"

        async def all_back() -> bool:
            return world.route is not None and _weight(world.route, old) == 100

        await eventually(env, all_back, step=timedelta(milliseconds=500))
        moves = [act for act in world.log[since:] if act.kind == "HTTPRoute"]
    old_weights = [_weight(act.detail, old, flat=True) for act in moves]
    # All of it in the first move: a reverted spec would step back stepSizePercent per intervalSeconds.
    assert old_weights[0] == 100, old_weights
    assert set(old_weights) == {100}, old_weights


def _weight(route: dict[str, Any], cluster: str, flat: bool = False) -> int:
    if flat:  # the fake world logs a route as {backend: weight}
        return int(route.get(f"{cluster}-serve-svc", 0))
    backends = route["spec"]["rules"][0]["backendRefs"]
    return next((int(b.get("weight", 0)) for b in backends if b["name"] == f"{cluster}-serve-svc"), 0)
