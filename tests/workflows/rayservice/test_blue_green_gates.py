"""raypilot.io/rollout's blue-green (NewCluster) gates on the fake world (time-skipping server): a failed
pre-promotion analysis rolls back before the Service switch; autoPromotionEnabled false waits for promote;
a failed post-promotion analysis switches the Services back and keeps the old cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import Handle, condition_of, eventually, status_of
from tests.workflows.rayservice.fakes_gates import FAILING, GatedWorld
from tests.workflows.rayservice.upgrade_support import (
    active_cluster,
    apply,
    assert_rolled_back,
    only_cluster_left,
    promoted_away_from,
    rolled_back_to,
    rollout_manifest,
    serving,
)

PROBE = {"name": "probe", "http": {"path": "/", "samples": 20, "minSuccessRate": 0.95}}
SERVE = "svc-serve-svc"


def blue_green(version: str, **rollout: Any) -> dict[str, Any]:
    return rollout_manifest(version, {"analyses": [PROBE], **rollout}, incremental=False)


@asynccontextmanager
async def upgrade_failing_its_analysis(
    env: WorkflowEnvironment, world: GatedWorld, **gate: str
) -> AsyncIterator[tuple[Handle, str]]:
    """v1 serving, then v2 applied with the analysis `gate` and a probe that fails: (handle, v1's cluster)."""
    async with serving(env, world, blue_green("v1", **gate)) as (handle, old):
        world.samples = FAILING
        await apply(handle, blue_green("v2", **gate))
        yield handle, old


async def test_a_failed_pre_promotion_analysis_rolls_back_before_the_switch(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, GatedWorld()
    async with upgrade_failing_its_analysis(env, world, prePromotionAnalysis="probe") as (handle, old):
        await eventually(env, rolled_back_to(world, handle, old), step=timedelta(milliseconds=500))
        final = await status_of(handle)
    message = assert_rolled_back(final, world, old, "RolloutAnalysis", "AnalysisFailed")
    assert [act.detail["selector"]["ray.io/cluster"] for act in world.acts("update", "Service")] == []
    assert world.selected_cluster(SERVE) == old  # never switched
    assert "Analysis probe failed" in message
    assert "success=75.0 %" in message
    assert world.probes[0].service != f"{old}-head-svc"  # the new cluster's own Service


async def test_manual_promotion_holds_the_switch_until_promote(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, GatedWorld()
    manual = {"autoPromotionEnabled": False, "prePromotionAnalysis": "probe"}
    async with serving(env, world, blue_green("v1", **manual)) as (handle, old):
        await apply(handle, blue_green("v2", **manual))

        async def awaiting() -> bool:
            return condition_of(await status_of(handle), "UpgradeControl") == ("True", "AwaitingPromotion")

        await eventually(env, awaiting, step=timedelta(milliseconds=500))
        await env.sleep(timedelta(minutes=10))  # the new cluster is ready and its gate passed: nothing moves
        assert world.selected_cluster(SERVE) == old
        assert condition_of(await status_of(handle), "RolloutAnalysis") == ("True", "AnalysisPassed")
        await handle.execute_update("promote", result_type=dict)
        await eventually(env, promoted_away_from(handle, old), step=timedelta(milliseconds=500))
        new = await active_cluster(handle)
    assert world.selected_cluster(SERVE) == new
    assert [e.type for e in world.events if e.reason == "AwaitingPromotion"] == ["Normal"]
    assert len(world.probes) == 1


async def test_a_failed_post_promotion_analysis_switches_back_and_keeps_the_old_cluster(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, GatedWorld()
    async with upgrade_failing_its_analysis(env, world, postPromotionAnalysis="probe") as (handle, old):

        async def switched_back() -> bool:
            return bool(world.probes) and world.selected_cluster(SERVE) == old

        await eventually(env, switched_back, step=timedelta(milliseconds=500))
        new = world.probes[0].service.removesuffix("-head-svc")
        switched = [act.detail["selector"]["ray.io/cluster"] for act in world.acts("update", "Service")]
        assert new in switched  # the Services did go to the new cluster first
        await eventually(env, only_cluster_left(world, old), step=timedelta(milliseconds=500))
        await env.sleep(timedelta(minutes=2))  # the same spec is not tried again
        final = await status_of(handle)
    assert world.live_clusters() == [old]
    assert not (final.get("pendingServiceStatus") or {}).get("rayClusterName")
    message = assert_rolled_back(final, world, old, "RolloutAnalysis", "AnalysisFailed")
    assert f"switching back to RayCluster {old}" in message
    assert old not in world.deleted_clusters
