"""raypilot.io/rollout progressDeadlineSeconds on the fake world (time-skipping server): a new cluster that
never becomes ready is rolled back at the deadline (incremental and NewCluster), or marked degraded while the
upgrade keeps waiting; one that is ready in time is said so."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.rollout import ANNOTATION_ROLLOUT
from raypilot.testing.rayservice_scenarios import (
    condition_of,
    eventually,
    rayservice_manifest,
    running_rayservice,
    status_of,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    apply,
    assert_rolled_back,
    new_pending_cluster,
    promoted_away_from,
    promoted_to,
    rolled_back_to,
    rollout_manifest,
    serving,
    stuck_rollout_upgrade,
)


async def advance(
    env: WorkflowEnvironment, total: timedelta, step: timedelta = timedelta(seconds=10)
) -> None:
    """Skips `total` in steps, as `eventually` does (one long sleep of the test server sometimes stalled
    here while the fake world's waits retried)."""
    for _ in range(int(total / step)):
        await env.sleep(step)


def condition_message(status: dict[str, Any], condition_type: str) -> str:
    return next(str(c.get("message")) for c in status["conditions"] if c["type"] == condition_type)


async def test_incremental_upgrade_past_the_deadline_rolls_back(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"progressDeadlineSeconds": 120}
    async with stuck_rollout_upgrade(env, world, rollout, "deploying") as (handle, old):
        new = await new_pending_cluster(env, handle)
        await advance(env, timedelta(seconds=100))
        waiting = await status_of(handle)
        assert waiting["pendingServiceStatus"]["rayClusterName"] == new  # before the deadline: still waiting
        assert condition_of(waiting, "RolloutProgressing") == ("", "")

        await eventually(env, rolled_back_to(world, handle, old))
        final = await status_of(handle)
        await advance(env, timedelta(minutes=5))  # the aborted spec is not tried again
        assert world.live_clusters() == [old]
    assert_rolled_back(final, world, old, "RolloutProgressing", "ProgressDeadlineExceeded")
    assert f"RayCluster {new} was not ready 120 s after the upgrade began" in condition_message(
        final, "RolloutProgressing"
    )
    assert condition_of(final, "UpgradeInProgress")[0] == "False"
    assert world.route is not None
    assert all(weight in (0, 100) for weight in _weights(world.route).values())  # no traffic ever moved


def _weights(route: dict[str, Any]) -> dict[str, int]:
    backends = route["spec"]["rules"][0]["backendRefs"]
    return {backend["name"]: int(backend.get("weight", 0)) for backend in backends}


async def test_new_cluster_upgrade_past_the_deadline_drops_the_new_cluster(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"progressDeadlineSeconds": 60}
    async with stuck_rollout_upgrade(env, world, rollout, "deploying", incremental=False) as (handle, old):
        await new_pending_cluster(env, handle)

        await eventually(env, rolled_back_to(world, handle, old))
        final = await status_of(handle)
    assert condition_of(final, "RolloutProgressing") == ("False", "ProgressDeadlineExceeded")
    assert condition_of(final, "Ready")[0] == "True"


async def test_degraded_keeps_waiting_and_the_upgrade_completes_once_ready(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"progressDeadlineSeconds": 60, "onProgressDeadline": "Degraded"}
    async with stuck_rollout_upgrade(env, world, rollout, "deploying", incremental=False) as (handle, old):
        new = await new_pending_cluster(env, handle)

        async def degraded() -> bool:
            return (
                condition_of(await status_of(handle), "RolloutProgressing")[1] == "ProgressDeadlineExceeded"
            )

        await eventually(env, degraded)
        assert sorted(world.live_clusters()) == sorted([old, new])  # still waiting for the new cluster
        world.clusters[new].serve_mode = "running"
        await eventually(env, promoted_to(handle, new))
    assert [e.type for e in world.events if e.reason == "ProgressDeadlineExceeded"] == ["Warning"]


async def test_a_cluster_ready_in_time_is_said_so(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout = {"progressDeadlineSeconds": 600}
    async with serving(env, world, rollout_manifest("v1", rollout, incremental=False)) as (handle, old):
        await apply(handle, rollout_manifest("v2", rollout, incremental=False))
        await eventually(env, promoted_away_from(handle, old))
        final = await status_of(handle)
    assert condition_of(final, "RolloutProgressing") == ("True", "NewClusterReady")


async def test_a_bad_rollout_annotation_fails_the_start_and_is_rejected_by_apply(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env = time_skipping_env
    bad = rayservice_manifest(annotations={ANNOTATION_ROLLOUT: "progressDeadlineSeconds: soon"})
    expected = f"{ANNOTATION_ROLLOUT}: progressDeadlineSeconds: Input should be a valid integer"
    world = FakeRayWorld()
    async with running_rayservice(env, world, bad, workflow_id="rayservice/default/bad") as handle:
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.message) == ("ValidationFailed", expected)
    assert world.log == []  # nothing created

    async with serving(env, world, rayservice_manifest()) as (handle, _):
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await apply(handle, bad)
        assert (await status_of(handle))["observedGeneration"] == 1
    cause = rejected.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.message) == ("ValidationFailed", expected)
