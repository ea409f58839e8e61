"""The upgrade controls (docs/contract.md §3) and rollback: pause freezes traffic and capacity, resume goes
on, promote finishes at once, abort and a reverted spec roll back; every control is rejected with a clear
message when no upgrade is in progress; with the incremental gate off the strategy falls back to
NewCluster."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, NamedTuple

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.features import FeatureGates
from models.operator import OperatorConfig
from raypilot.testing.rayservice_scenarios import (
    Handle,
    condition_of,
    eventually,
    incremental_manifest,
    rayservice_manifest,
    status_of,
    until_ready,
    upgrade_sequence,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    apply,
    cluster_deleted,
    only_cluster_left,
    pending_of,
    promoted_to,
    routed,
    serving,
    status_when,
    stuck_upgrade,
    traffic_moved_to_pending,
    with_condition,
)
from workflows.search_attributes import RAY_PHASE


class Upgrade(NamedTuple):
    handle: Handle
    old: str
    new: str
    since: int


@asynccontextmanager
async def upgrade_under_way(env: WorkflowEnvironment, world: FakeRayWorld) -> AsyncIterator[Upgrade]:
    """Deploy v1 with the incremental strategy, apply v2, and give (handle, old cluster, new cluster, log
    position at the apply) once traffic moves to the new cluster."""
    async with serving(env, world, incremental_manifest()) as (handle, old):
        await eventually(env, routed(world))
        since = len(world.log)
        await apply(handle, incremental_manifest("v2"))
        status = await status_when(env, handle, traffic_moved_to_pending)
        yield Upgrade(handle, old, pending_of(status), since)


@asynccontextmanager
async def new_cluster_upgrade_held_deploying(
    env: WorkflowEnvironment, world: FakeRayWorld
) -> AsyncIterator[tuple[Handle, str]]:
    """Deploy v1 (NewCluster strategy), apply v2 whose Serve stays DEPLOYING, and give (handle, old cluster)
    once the new one reported it (its Serve wait settled: a control cannot race its completion)."""
    v1, v2 = rayservice_manifest(deletion_delay=10), rayservice_manifest(version="v2", deletion_delay=10)
    async with stuck_upgrade(env, world, v1, v2, "deploying") as (handle, old):

        async def deploying() -> bool:
            apps = (await status_of(handle)).get("pendingServiceStatus", {}).get("applicationStatuses", {})
            return apps.get("app", {}).get("status") == "DEPLOYING"

        await eventually(env, deploying)
        yield handle, old


async def control(handle: Handle, name: str) -> dict[str, Any]:
    result: dict[str, Any] = await handle.execute_update(name, result_type=dict)
    return result


@pytest.mark.parametrize("name", ["pause", "resume", "promote", "abort"])
async def test_controls_are_rejected_when_no_upgrade_is_in_progress(
    time_skipping_env: WorkflowEnvironment, name: str
) -> None:
    world = FakeRayWorld()
    async with serving(time_skipping_env, world, incremental_manifest()) as (handle, _):
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await control(handle, name)
    cause = rejected.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UpgradeControlRejected"
    assert cause.message == f"{name} rejected: no upgrade is in progress for RayService default/svc"


async def test_pause_freezes_traffic_and_capacity_until_resume(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgrade_under_way(env, world) as (handle, old, new, since):
        paused = await control(handle, "pause")
        assert "paused" in paused["message"].lower()
        frozen = upgrade_sequence(world, since, new)
        await env.sleep(timedelta(minutes=5))
        status = await status_of(handle)
        assert upgrade_sequence(world, since, new) == frozen
        assert condition_of(status, "UpgradeControl") == ("True", "Paused")
        with pytest.raises(WorkflowUpdateFailedError):
            await control(handle, "pause")
        await control(handle, "resume")
        await eventually(env, promoted_to(handle, new))
        final = await until_ready(env, handle)
    assert condition_of(final, "UpgradeControl") == ("", "")
    assert upgrade_sequence(world, since, new)[-1] == ("active_capacity", 0)
    assert old not in final["activeServiceStatus"]["rayClusterName"]


async def test_promote_finishes_the_upgrade_without_waiting_for_intervals(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgrade_under_way(env, world) as (handle, _, new, _):
        started = await env.get_current_time()
        await control(handle, "promote")
        await eventually(env, promoted_to(handle, new), step=timedelta(milliseconds=500))
        took = await env.get_current_time() - started
    # The remaining steps would take at least three intervals of 10 s.
    assert took < timedelta(seconds=10)
    assert world.route is not None
    assert [ref["name"] for ref in world.route["spec"]["rules"][0]["backendRefs"]] == [f"{new}-serve-svc"]


async def test_abort_rolls_back_to_the_active_cluster_and_deletes_the_new_one(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgrade_under_way(env, world) as (handle, old, new, _):
        await control(handle, "abort")
        rolling_back = await status_of(handle)
        assert condition_of(rolling_back, "RollbackInProgress") == ("True", "UpgradeAborted")
        described = await handle.describe()
        assert described.typed_search_attributes.get(RAY_PHASE) == "RollingBack"
        await eventually(env, cluster_deleted(world, new))
        final = await until_ready(env, handle)
        await env.sleep(timedelta(minutes=2))
        after = await status_of(handle)
    assert final["activeServiceStatus"]["rayClusterName"] == old
    assert condition_of(final, "UpgradeInProgress")[0] == "False"
    assert condition_of(final, "RollbackInProgress") == ("", "")
    assert world.route is not None
    assert [ref["weight"] for ref in world.route["spec"]["rules"][0]["backendRefs"]] == [100]
    # The aborted spec does not start the same upgrade again.
    assert after["activeServiceStatus"]["rayClusterName"] == old
    assert "rayClusterName" not in after.get("pendingServiceStatus", {})
    assert world.live_clusters() == [old]


async def test_a_reverted_spec_rolls_back_traffic_and_capacity(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgrade_under_way(env, world) as (handle, old, new, since):
        await apply(handle, incremental_manifest("v1"))
        rolling_back = await status_when(
            env, handle, with_condition("RollbackInProgress"), step=timedelta(milliseconds=200)
        )
        assert condition_of(rolling_back, "RollbackInProgress")[1] == "DesiredClusterSpecChanged"
        await eventually(env, cluster_deleted(world, new))
        final = await until_ready(env, handle)
    assert final["activeServiceStatus"]["rayClusterName"] == old
    assert final["activeServiceStatus"]["trafficRoutedPercent"] == 100
    assert final["activeServiceStatus"]["targetCapacity"] == 100
    assert condition_of(final, "UpgradeInProgress") == ("False", "NoPendingCluster")
    traffic = [value for kind, value in upgrade_sequence(world, since, new) if kind == "traffic"]
    assert traffic[-1] == 0


async def test_new_cluster_upgrade_abort_drops_the_pending_cluster(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with new_cluster_upgrade_held_deploying(env, world) as (handle, old):
        await control(handle, "abort")
        await eventually(env, only_cluster_left(world, old))
        final = await status_of(handle)
    assert condition_of(final, "UpgradeInProgress")[0] == "False"
    assert condition_of(final, "Ready")[0] == "True"
    assert final["activeServiceStatus"]["rayClusterName"] == old


async def test_incremental_gate_off_falls_back_to_new_cluster(time_skipping_env: WorkflowEnvironment) -> None:
    env = time_skipping_env
    world = FakeRayWorld(OperatorConfig(feature_gates=FeatureGates(ray_service_incremental_upgrade=False)))
    async with serving(env, world, incremental_manifest()) as (handle, old):
        await apply(handle, incremental_manifest("v2"))

        async def switched() -> bool:
            return world.selected_cluster("svc-serve-svc") not in ("", old)

        await eventually(env, switched)
    assert world.gateway is None
    assert world.route is None


async def test_new_cluster_promote_is_rejected_and_the_upgrade_still_waits_for_readiness(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with new_cluster_upgrade_held_deploying(env, world) as (handle, old):
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await control(handle, "promote")
        await env.sleep(timedelta(minutes=2))
        held = await status_of(handle)
        new = held["pendingServiceStatus"]["rayClusterName"]
        # Nothing was skipped: the old cluster still serves while the new one is not ready.
        assert held["activeServiceStatus"]["rayClusterName"] == old
        assert condition_of(held, "UpgradeControl") == ("", "")
        assert world.selected_cluster("svc-serve-svc") == old
        world.serve_mode_for_new_clusters = "running"
        world.clusters[new].serve_mode = "running"
        await eventually(env, promoted_to(handle, new))
    cause = rejected.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UpgradeControlRejected"
    assert cause.message.startswith("promote rejected: RayService default/svc upgrades with NewCluster")
    assert "readiness is still required" in cause.message
