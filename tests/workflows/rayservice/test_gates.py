"""raypilot.io/rollout's measured analysis gates on the fake world (time-skipping server): an HTTP probe or a
Prometheus query at a step of an incremental plan; a pass goes on, a fail rolls back at once with
AnalysisFailed and the measured values; an inconclusive Prometheus run is asked again later."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    Handle,
    condition_of,
    eventually,
    status_of,
)
from tests.workflows.rayservice.fakes_gates import FAILING, GatedWorld
from tests.workflows.rayservice.upgrade_support import (
    apply,
    assert_rolled_back,
    only_cluster_left,
    pending_cluster,
    promoted_away_from,
    rollout_manifest,
    serving,
)
from wire.analysis import PrometheusAnswer

PROBE = {"name": "probe", "http": {"path": "/healthz?deep=1", "samples": 20, "minSuccessRate": 0.95}}
ERRORS = {
    "name": "errors",
    "prometheus": {"address": "http://prom:9090", "query": "error_ratio", "successCondition": "< 0.01"},
}


def gated(version: str, analysis: dict[str, Any]) -> dict[str, Any]:
    """An incremental upgrade that runs `analysis` once 10 % of the traffic reaches the new cluster."""
    rollout = {
        "steps": [{"traffic": 10}, {"analysis": analysis["name"]}, {"traffic": 50}],
        "analyses": [analysis],
    }
    return rollout_manifest(version, rollout)


async def upgraded_or_rolled_back(env: WorkflowEnvironment, handle: Handle, old: str) -> dict[str, Any]:
    async def ended() -> bool:
        return not await pending_cluster(handle)

    await eventually(env, ended, step=timedelta(milliseconds=500))
    return await status_of(handle)


async def test_a_passing_http_probe_lets_the_plan_go_on(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, GatedWorld()
    async with serving(env, world, gated("v1", PROBE)) as (handle, old):
        await apply(handle, gated("v2", PROBE))
        await eventually(env, promoted_away_from(handle, old), step=timedelta(seconds=1))
        final = await upgraded_or_rolled_back(env, handle, old)
        new = final["activeServiceStatus"]["rayClusterName"]
        await eventually(env, only_cluster_left(world, new), step=timedelta(seconds=2))
    assert len(world.probes) == 1  # one run per cluster and step, kept in the state
    probe = world.probes[0]
    assert (probe.service, probe.port, probe.path, probe.samples) == (
        f"{new}-head-svc",
        8000,
        "/healthz?deep=1",
        20,
    )
    assert condition_of(final, "RolloutAnalysis") == ("True", "AnalysisPassed")
    message = next(c["message"] for c in final["conditions"] if c["type"] == "RolloutAnalysis")
    assert message == "analysis probe: pass (samples=20, success=100.0 % (min 95.0 %), p95=12.0 ms)"


async def test_a_failing_http_probe_rolls_back_with_the_measured_values(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, GatedWorld()
    async with serving(env, world, gated("v1", PROBE)) as (handle, old):
        world.samples = FAILING
        await apply(handle, gated("v2", PROBE))
        final = await upgraded_or_rolled_back(env, handle, old)
        await eventually(env, only_cluster_left(world, old), step=timedelta(milliseconds=500))
    message = assert_rolled_back(final, world, old, "RolloutAnalysis", "AnalysisFailed")
    assert "samples=20, success=75.0 % (min 95.0 %)" in message
    assert "failed with HTTP 503" in message
    assert world.route is not None
    backends = {b["name"]: b.get("weight") for b in world.route["spec"]["rules"][0]["backendRefs"]}
    assert backends.get(f"{old}-serve-svc") == 100


async def test_prometheus_gate_fails_on_its_value_and_waits_when_inconclusive(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, GatedWorld()
    inconclusive = {**ERRORS, "prometheus": {**ERRORS["prometheus"], "onError": "Inconclusive"}}
    async with serving(env, world, gated("v1", inconclusive)) as (handle, old):
        world.prometheus = PrometheusAnswer(error="Prometheus unreachable: ConnectError: refused")
        await apply(handle, gated("v2", inconclusive))

        async def asked_twice() -> bool:
            return len(world.queries) >= 2

        await eventually(env, asked_twice, step=timedelta(seconds=5))
        waiting = await status_of(handle)
        assert condition_of(waiting, "RolloutAnalysis") == ("Unknown", "AnalysisRunning")
        assert waiting["pendingServiceStatus"]["rayClusterName"]
        world.prometheus = PrometheusAnswer(value=0.2, series=1)
        final = await upgraded_or_rolled_back(env, handle, old)
    assert final["activeServiceStatus"]["rayClusterName"] == old
    message = next(e.message for e in world.events if e.reason == "AnalysisFailed")
    assert "value=0.2, condition < 0.01" in message
    assert world.queries[0].query == "error_ratio"
