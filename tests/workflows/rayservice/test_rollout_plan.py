"""raypilot.io/rollout step plans on the fake world (time-skipping server): the plan walked exactly, with
non-linear weights, a timed pause held by a durable timer, and an indefinite pause that waits for resume."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    Handle,
    condition_of,
    eventually,
    status_of,
    timed_sequence,
    upgrade_sequence,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    apply,
    assert_rolled_back,
    promoted_away_from,
    rolled_back_to,
    rollout_manifest,
    routed,
    serving,
    upgrade_finished,
)

PLAN = {
    "steps": [
        {"traffic": 1},
        {"pause": "30s"},
        {"traffic": 5},
        {"traffic": 25, "pause": "indefinite"},
    ]
}


def planned(version: str, plan: dict[str, Any] | None = None) -> dict[str, Any]:
    return rollout_manifest(version, plan or PLAN)


async def pending_of(handle: Handle) -> dict[str, Any]:
    return (await status_of(handle)).get("pendingServiceStatus") or {}


async def test_the_plan_is_walked_exactly_and_an_indefinite_pause_waits_for_resume(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, planned("v1")) as (handle, old):
        await eventually(env, routed(world))
        since = len(world.log)
        await apply(handle, planned("v2"))

        async def at_25() -> bool:
            return (await pending_of(handle)).get("trafficRoutedPercent") == 25

        await eventually(env, at_25)
        new = (await pending_of(handle))["rayClusterName"]
        await env.sleep(timedelta(minutes=10))  # an indefinite pause: nothing moves, however long
        paused = await status_of(handle)
        assert paused["pendingServiceStatus"]["trafficRoutedPercent"] == 25
        assert condition_of(paused, "UpgradeControl") == ("True", "PausedByStepPlan")
        assert condition_of(paused, "RolloutStep") == ("True", "WalkingStepPlan")
        await handle.execute_update("resume", result_type=dict)

        await eventually(env, upgrade_finished(handle, old))
        final = await status_of(handle)
    assert condition_of(final, "RolloutStep") == ("", "")  # gone with the upgrade
    assert condition_of(final, "UpgradeControl") == ("", "")
    assert upgrade_sequence(world, since, new) == [
        ("pending_capacity", 50),
        ("traffic", 1),
        ("traffic", 5),
        ("traffic", 25),
        ("traffic", 50),  # resumed: the rest, as fast as the capacity allows
        ("active_capacity", 50),
        ("pending_capacity", 100),
        ("traffic", 100),
        ("active_capacity", 0),
    ]
    times = {value: at for kind, value, at in timed_sequence(world, since, new) if kind == "traffic"}
    # the timed pause is one durable timer; the route PUTs follow their decisions after the pass's earlier
    # activities, whose run time moves the test server's clock (about a second on a loaded machine)
    assert abs(times[5] - times[1] - timedelta(seconds=30)) < timedelta(milliseconds=1500)
    assert times[25] - times[5] < timedelta(seconds=5)  # no intervalSeconds between plan steps


async def test_promote_during_an_indefinite_pause_finishes_the_upgrade(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    plan = {"steps": [{"traffic": 10, "pause": "indefinite"}, {"traffic": 60}]}
    async with serving(env, world, planned("v1", plan)) as (handle, old):
        await apply(handle, planned("v2", plan))

        async def paused_at_10() -> bool:
            status = await status_of(handle)
            return (status.get("pendingServiceStatus") or {}).get("trafficRoutedPercent") == 10 and (
                condition_of(status, "UpgradeControl")[1] == "PausedByStepPlan"
            )

        await eventually(env, paused_at_10)
        await handle.execute_update("promote", result_type=dict)
        await eventually(env, promoted_away_from(handle, old))


GATED = {
    "steps": [{"traffic": 10}, {"analysis": "serve-healthy"}, {"traffic": 50}],
    "analyses": [{"name": "serve-healthy", "serveStatus": {}}],
    "onUnhealthy": "Wait",  # so that the gate, not the unhealthy-cluster check, judges the failure
}


async def test_a_passing_serve_status_gate_lets_the_plan_go_on(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, planned("v1", GATED)) as (handle, old):
        await apply(handle, planned("v2", GATED))
        await eventually(env, promoted_away_from(handle, old))
        final = await status_of(handle)
    assert condition_of(final, "RolloutAnalysis") == ("True", "AnalysisPassed")
    message = next(c["message"] for c in final["conditions"] if c["type"] == "RolloutAnalysis")
    assert message == "analysis serve-healthy: pass (app=RUNNING)"


async def test_a_failing_serve_status_gate_rolls_back(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    plan = {
        **GATED,
        "steps": [{"traffic": 10}, {"pause": "1m"}, {"analysis": "serve-healthy"}, {"traffic": 50}],
    }
    async with serving(env, world, planned("v1", plan)) as (handle, old):
        await apply(handle, planned("v2", plan))

        async def at_10() -> bool:
            return (await pending_of(handle)).get("trafficRoutedPercent") == 10

        await eventually(env, at_10, step=timedelta(milliseconds=500))
        new = (await pending_of(handle))["rayClusterName"]
        world.clusters[new].serve_mode = "failed"  # v2 breaks while it takes 10 % of the traffic

        # Steps of 5 s: the 1 min pause and the gate take workflow time, and each step is a query and a
        # time skip (at 1 s steps, 400 of them outlasted the test's timeout once on a loaded machine).
        await eventually(env, rolled_back_to(world, handle, old), step=timedelta(seconds=5))
        final = await status_of(handle)
    assert assert_rolled_back(final, world, old, "RolloutAnalysis", "AnalysisFailed") == (
        f"Analysis serve-healthy failed on RayCluster {new} (app=DEPLOY_FAILED); "
        "rolling back to the active cluster."
    )
