"""raypilot.io/in-place-restart with strategy None on the time-skipping server: the cluster spec change is
written to the active cluster and its Pods are restarted for real, worker group by worker group, then the
head, each next group only once Serve is RUNNING again; progress in the condition InPlaceRestart and in
Events."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    condition_of,
    eventually,
    rayservice_manifest,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import apply, serving

NONE = {"type": "None"}
RESTART = {"raypilot.io/in-place-restart": "true"}


def manifest(version: str) -> dict[str, Any]:
    return rayservice_manifest(version=version, strategy=NONE, worker_groups=2, annotations=RESTART)


async def test_in_place_restart_rolls_worker_groups_then_the_head_waiting_for_serve(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, manifest("v1")) as (handle, cluster):
        fake = world.clusters[cluster]
        old_hash = fake.body["metadata"]["annotations"]["ray.io/hash-without-replicas-and-workers-to-delete"]
        # Serve is not RUNNING after the first group restarted: the roll waits.
        world.serve_mode_after_pod_delete = "deploying"
        await apply(handle, manifest("v2"))

        async def deleted(count: int) -> bool:
            return len(world.acts("delete", "Pod")) >= count

        await eventually(env, lambda: deleted(1), step=timedelta(milliseconds=200))
        status = await status_of(handle)
        assert condition_of(status, "InPlaceRestart") == ("True", "RestartingPods")
        await env.sleep(timedelta(minutes=2))
        assert [act.name for act in world.acts("delete", "Pod")] == [f"{cluster}-group-0-worker-1-0"]
        world.serve_mode_after_pod_delete = None
        fake.serve_mode = "running"

        async def finished() -> bool:
            return condition_of(await status_of(handle), "InPlaceRestart") == ("False", "RestartComplete")

        await eventually(env, finished)
        final = await until_ready(env, handle)
    new_hash = fake.body["metadata"]["annotations"]["ray.io/hash-without-replicas-and-workers-to-delete"]
    assert new_hash != old_hash
    assert [act.name for act in world.acts("delete", "Pod")] == [
        f"{cluster}-group-0-worker-1-0",
        f"{cluster}-group-1-worker-1-0",
        f"{cluster}-head-1",
    ]
    # Every Pod now runs the new spec; the cluster stayed the same object.
    assert {pod["metadata"]["annotations"]["fake/spec-hash"] for pod in fake.pods()} == {new_hash}
    assert world.live_clusters() == [cluster]
    assert len(world.acts("update", "RayCluster")) == 1
    # The head restart lost the Serve applications; the config was submitted again after it.
    head_deleted = world.acts("delete", "Pod")[-1].at
    assert any(act.at >= head_deleted for act in world.acts("put"))
    reasons = [event.reason for event in world.events]
    assert reasons.count("RestartingPods") == 3
    assert reasons.count("RestartedPods") == 3
    assert "InPlaceRestartComplete" in reasons
    assert "InPlaceRestartStarted" in reasons
    assert "RayClusterSpecChangeNotApplied" not in reasons
    assert condition_of(final, "ClusterSpecNotApplied") == ("", "")


async def history_length(handle: Any) -> int:
    return len((await handle.fetch_history()).events)


async def test_a_roll_writes_no_history_while_it_waits_for_serve(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """Patch rayservice-waits-not-polls: the roll waits on its cluster's Pods and Serve, not a timer and two
    reads every 2 s. Measured on this scenario: the polling loop wrote 1,377 events from the apply to the
    end of the roll (about 11 per 2 s while Serve was held), the waits about 225."""
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, manifest("v1")) as (handle, cluster):
        world.serve_mode_after_pod_delete = "deploying"
        before_apply = await history_length(handle)
        await apply(handle, manifest("v2"))

        async def holding() -> bool:
            message = (await status_of(handle))["conditions"]
            return any("waiting for Serve" in str(c.get("message")) for c in message)

        await eventually(env, holding, step=timedelta(milliseconds=200))
        await env.sleep(timedelta(seconds=10))  # the passes the deletion caused are over
        held_from = await history_length(handle)
        await env.sleep(timedelta(minutes=2))
        # Nothing changed for two minutes: nothing written (the loop: ~60 timers and 120 reads).
        assert await history_length(handle) == held_from
        world.serve_mode_after_pod_delete = None
        world.clusters[cluster].serve_mode = "running"

        async def finished() -> bool:
            return condition_of(await status_of(handle), "InPlaceRestart") == ("False", "RestartComplete")

        await eventually(env, finished)
        roll = await history_length(handle) - before_apply
    assert [act.name for act in world.acts("delete", "Pod")] == [
        f"{cluster}-group-0-worker-1-0",
        f"{cluster}-group-1-worker-1-0",
        f"{cluster}-head-1",
    ]
    assert roll < 400, roll


async def test_without_a_pods_wait_the_roll_checks_every_two_seconds(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """A worker that does not run the Pods wait (NotFoundError): the roll lists the Pods and checks again
    every 2 s, as before the waits, and completes."""
    env, world = time_skipping_env, FakeRayWorld()
    world.pods_wait_registered = False
    async with serving(env, world, manifest("v1")) as (handle, cluster):
        await apply(handle, manifest("v2"))

        async def finished() -> bool:
            return condition_of(await status_of(handle), "InPlaceRestart") == ("False", "RestartComplete")

        await eventually(env, finished, step=timedelta(milliseconds=500))
    assert [act.name for act in world.acts("delete", "Pod")] == [
        f"{cluster}-group-0-worker-1-0",
        f"{cluster}-group-1-worker-1-0",
        f"{cluster}-head-1",
    ]
