"""raypilot.io/rollout per-step deadlines and the head Pod crash loop on the fake world (time-skipping
server): a step that does not reach its traffic in time rolls back (onProgressDeadline: Abort); a pending
cluster whose head Pod crash-loops is rolled back (onUnhealthy: Abort)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import eventually, status_of
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    assert_rolled_back,
    new_pending_cluster,
    only_cluster_left,
    rolled_back_to,
    stuck_rollout_upgrade,
)


async def test_a_step_past_its_deadline_rolls_back(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"steps": [{"traffic": 10, "progressDeadlineSeconds": 60}, {"traffic": 50}]}
    # v2's replicas never come up: no traffic moves
    async with stuck_rollout_upgrade(env, world, rollout, "deploying") as (handle, old):
        await new_pending_cluster(env, handle, step=timedelta(milliseconds=500))
        began = await env.get_current_time()
        await eventually(env, rolled_back_to(world, handle, old), step=timedelta(seconds=5))
        final = await status_of(handle)
    message = assert_rolled_back(final, world, old, "RolloutProgressing", "StepDeadlineExceeded")
    assert "Step 1 of raypilot.io/rollout" in message
    assert "did not reach its traffic in 60 s; rolling back" in message
    deleted = next(act.at for act in world.acts("delete", "RayCluster"))
    assert deleted - began >= timedelta(seconds=60)  # not before the deadline (then the delay and drain)


def crash_looping_head(name: str) -> dict[str, Any]:
    waiting = {
        "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}
    }
    return {
        "metadata": {"name": f"{name}-head-1", "uid": f"uid-{name}-head", "labels": {}},
        "spec": {"containers": [{"name": "ray-head"}]},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.9",
            "containerStatuses": [{"name": "ray-head", "restartCount": 4, "state": waiting}],
        },
    }


async def test_a_crash_looping_head_rolls_back(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"onUnhealthy": "Abort"}
    async with stuck_rollout_upgrade(env, world, rollout, "deploying", incremental=False) as (handle, old):

        async def created() -> bool:
            return len(world.clusters) == 2

        await eventually(env, created, step=timedelta(milliseconds=500))
        new = next(name for name in world.clusters if name != old)
        world.clusters[new].head_pod = lambda: crash_looping_head(new)  # type: ignore[method-assign]
        world.clusters[new].serve_mode = "down"  # the dashboard goes with the head: the Serve wait returns
        await eventually(env, only_cluster_left(world, old), step=timedelta(milliseconds=500))
        final = await status_of(handle)
    message = assert_rolled_back(final, world, old, "RolloutProgressing", "HeadPodCrashLoop")
    assert f"The head Pod of RayCluster {new} is crash-looping (ray-head: CrashLoopBackOff, 4 restarts)" in (
        message
    )
    assert world.selected_cluster("svc-serve-svc") == old
