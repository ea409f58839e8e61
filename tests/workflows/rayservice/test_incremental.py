"""NewClusterWithIncrementalUpgrade on the fake world: Gateway, HTTPRoute, traffic steps exactly
intervalSeconds apart by durable timers, capacity steps once traffic caught up and the replicas run,
promotion, and the history cost of a 4-step upgrade."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    WORKFLOW_ID,
    Handle,
    condition_of,
    eventually,
    incremental_manifest,
    status_of,
    timed_sequence,
    upgrade_sequence,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.incremental_simulation import expected_upgrade_steps
from tests.workflows.rayservice.upgrade_support import (
    apply,
    cluster_deleted,
    routed,
    serving,
    status_when,
    with_condition,
)


async def history_length(env: WorkflowEnvironment) -> int:
    return (await env.client.get_workflow_handle(WORKFLOW_ID).describe()).history_length


async def promoted(handle: Handle, old: str) -> dict[str, Any] | None:
    status = await status_of(handle)
    active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
    pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
    return status if active not in (None, old) and not pending else None


async def test_incremental_upgrade_moves_traffic_and_capacity_step_by_step(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, incremental_manifest()) as (handle, old):
        await eventually(env, routed(world))
        assert world.gateway is not None
        assert world.gateway["spec"]["gatewayClassName"] == "istio"
        before = await history_length(env)
        since = len(world.log)
        await apply(handle, incremental_manifest("v2"))
        upgrading = await status_when(
            env, handle, with_condition("UpgradeInProgress"), step=timedelta(milliseconds=200)
        )
        new = upgrading["pendingServiceStatus"]["rayClusterName"]
        final: dict[str, Any] | None = None

        async def done() -> bool:
            nonlocal final
            final = await promoted(handle, old)
            return final is not None

        await eventually(env, done)
        cost = await history_length(env) - before
        await eventually(env, cluster_deleted(world, old))
    assert final is not None
    assert condition_of(final, "UpgradeInProgress") == ("False", "NoPendingCluster")
    expected = [(step.kind, step.value) for step in expected_upgrade_steps(50, 25) if step.kind != "promote"]
    assert upgrade_sequence(world, since, new) == expected
    traffic_times = [at for kind, _, at in timed_sequence(world, since, new) if kind == "traffic"]
    gaps = [later - earlier for earlier, later in itertools.pairwise(traffic_times)]
    assert gaps
    # The steps are decided exactly 10 s apart (lastTrafficMigratedTime); the route PUT follows its decision
    # after the pass's earlier activities, whose run time moves the test server's clock too (about a second
    # on a loaded machine). So a gap may be that much off, but the delays never add up.
    jitter = timedelta(milliseconds=1500)
    assert all(abs(gap - timedelta(seconds=10)) < jitter for gap in gaps), gaps
    assert abs((traffic_times[-1] - traffic_times[0]) - len(gaps) * timedelta(seconds=10)) < jitter, gaps
    assert cost <= 200, cost
    # After promotion the route sends everything to the new cluster's Service.
    assert world.route is not None
    assert world.route["spec"]["rules"][0]["backendRefs"] == [
        {"name": f"{new}-serve-svc", "namespace": "default", "port": 8000, "weight": 100}
    ]
