"""raypilot.io/rollout headerCanary on the fake world (time-skipping server): while an incremental upgrade has
a pending cluster, the HTTPRoute carries a second rule sending requests with the header to it, already before
any weighted traffic; the rule goes at promotion and at abort; without the setting the route is KubeRay's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import eventually, status_of
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import apply, rollout_manifest, serving

CANARY = {"name": "x-canary", "value": "v2"}


def manifest(version: str, canary: dict[str, str] | None = CANARY) -> dict[str, Any]:
    rollout: dict[str, Any] = {"steps": [{"pause": "indefinite"}, {"traffic": 50}]}
    if canary is not None:
        rollout["headerCanary"] = canary
    return rollout_manifest(version, rollout)


def rules(world: FakeRayWorld) -> list[dict[str, Any]]:
    return list(((world.route or {}).get("spec") or {}).get("rules") or [])


def weights(rule: dict[str, Any]) -> dict[str, int]:
    return {ref["name"]: int(ref.get("weight", 1)) for ref in rule["backendRefs"]}


async def paused_with_a_pending_cluster(env: WorkflowEnvironment, handle: Any) -> str:
    async def paused() -> bool:
        status = await status_of(handle)
        pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
        return bool(pending) and any(c["type"] == "UpgradeControl" for c in status.get("conditions") or [])

    await eventually(env, paused, step=timedelta(milliseconds=500))
    return str((await status_of(handle))["pendingServiceStatus"]["rayClusterName"])


async def test_the_header_rule_reaches_the_pending_cluster_before_any_weighted_traffic(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, manifest("v1")) as (handle, old):
        await apply(handle, manifest("v2"))
        new = await paused_with_a_pending_cluster(env, handle)

        async def canary_ready() -> bool:  # the route is written after the pass' status: wait for both
            pending = (await status_of(handle))["pendingServiceStatus"]
            return len(rules(world)) == 2 and pending.get("targetCapacity") == 50

        await eventually(env, canary_ready, step=timedelta(milliseconds=500))
        weighted, by_header = rules(world)
        assert weights(weighted) == {f"{old}-serve-svc": 100, f"{new}-serve-svc": 0}
        # the first capacity step (to maxSurgePercent, 50) is taken although the plan paused first
        pending = (await status_of(handle))["pendingServiceStatus"]
        assert (pending["targetCapacity"], pending.get("trafficRoutedPercent")) == (50, 0)
        assert by_header["matches"] == [
            {
                "path": {"type": "PathPrefix", "value": "/"},
                "headers": [{"type": "Exact", "name": "x-canary", "value": "v2"}],
            }
        ]
        assert weights(by_header) == {f"{new}-serve-svc": 1}
        await handle.execute_update("promote", result_type=dict)

        async def promoted() -> bool:
            return (await status_of(handle))["activeServiceStatus"]["rayClusterName"] == new

        await eventually(env, promoted, step=timedelta(milliseconds=500))
    [only] = rules(world)
    assert weights(only) == {f"{new}-serve-svc": 100}


async def test_the_header_rule_goes_at_abort(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, manifest("v1")) as (handle, old):
        await apply(handle, manifest("v2"))
        await paused_with_a_pending_cluster(env, handle)

        async def two_rules() -> bool:
            return len(rules(world)) == 2

        await eventually(env, two_rules, step=timedelta(milliseconds=500))
        await handle.execute_update("abort", result_type=dict)

        async def one_rule_to_the_old_cluster() -> bool:
            return len(rules(world)) == 1 and weights(rules(world)[0]).get(f"{old}-serve-svc") == 100

        await eventually(env, one_rule_to_the_old_cluster, step=timedelta(milliseconds=500))


async def test_without_the_setting_the_route_has_only_kuberays_rule(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, manifest("v1", canary=None)) as (handle, _):
        await apply(handle, manifest("v2", canary=None))
        await paused_with_a_pending_cluster(env, handle)
    assert len(rules(world)) == 1
