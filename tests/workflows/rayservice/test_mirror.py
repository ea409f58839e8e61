"""raypilot.io/rollout steps[].mirror on the fake world (time-skipping server): the HTTPRoute's weighted rule
mirrors the step's share to the pending cluster before any weight moves, the next mirror step changes it at
the end of a timed pause (a durable timer), and the traffic step ends it (no route both mirrors and sends
weighted traffic to the pending cluster); an abort ends it too. The status and Events say a mirror is on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.cli.render import render_status
from raypilot.testing.rayservice_scenarios import Handle, condition_of, eventually, status_of
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    apply,
    new_pending_cluster,
    rollout_manifest,
    routed,
    serving,
    upgrade_finished,
)
from tests.workflows.timer_dues import acts_with_decision_times, steps_timed_by_timers, timer_dues
from wire import names

PLAN = {
    "steps": [
        {"mirror": 10, "pause": "5m"},
        {"mirror": 30, "pause": "5m"},
        {"traffic": 50},
    ]
}
PAUSE = timedelta(minutes=5)


def mirrors(spec: dict[str, Any]) -> list[tuple[str, int]]:
    """The RequestMirror filters of the route's weighted rule: (backend Service, percent)."""
    rule = (spec.get("rules") or [{}])[0]
    return [
        (f["requestMirror"]["backendRef"]["name"], f["requestMirror"]["percent"])
        for f in rule.get("filters") or []
        if f.get("type") == "RequestMirror"
    ]


def pending_weight(spec: dict[str, Any], new: str) -> int:
    rule = (spec.get("rules") or [{}])[0]
    return next((int(r["weight"]) for r in rule["backendRefs"] if r["name"] == f"{new}-serve-svc"), -1)


@asynccontextmanager
async def upgrading_with(
    env: WorkflowEnvironment, world: FakeRayWorld, plan: dict[str, Any]
) -> AsyncIterator[tuple[Handle, str, str]]:
    """v1 served through its HTTPRoute, then the upgrade to v2 under `plan` applied: (handle, the cluster
    that serves, the new pending cluster)."""
    async with serving(env, world, rollout_manifest("v1", plan)) as (handle, old):
        await eventually(env, routed(world))
        await apply(handle, rollout_manifest("v2", plan))
        yield handle, old, await new_pending_cluster(env, handle)


async def route_writes(handle: Handle) -> list[tuple[datetime, dict[str, Any]]]:
    """Each update of the HTTPRoute's spec with the workflow time that decided it."""
    history = await handle.fetch_history()
    return [(at, body["spec"]) for at, body in acts_with_decision_times(history, names.UPDATE_HTTPROUTE_SPEC)]


async def test_mirror_steps_copy_before_any_weight_moves_and_the_traffic_step_ends_them(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgrading_with(env, world, PLAN) as (handle, old, new):

        async def mirroring() -> bool:
            return mirrors((world.route or {}).get("spec") or {}) == [(f"{new}-serve-svc", 10)]

        await eventually(env, mirroring, step=timedelta(milliseconds=500))
        status = await status_of(handle)
        assert condition_of(status, "RolloutMirror") == ("True", "Mirroring")
        step_line = next(c["message"] for c in status["conditions"] if c["type"] == "RolloutStep")
        assert step_line == "step 1 of 3: pausing (traffic up to 0 %, mirroring 10 %)"
        shown = render_status("rayservice", status)  # what `raypilot status` prints
        assert f"10 % of the requests are mirrored to RayCluster {new}" in shown
        await eventually(env, upgrade_finished(handle, old), step=timedelta(seconds=10))
        writes = await route_writes(handle)
        final = await status_of(handle)

    # each write that changed the mirror, with the new cluster's weight at that moment
    changes: list[tuple[datetime, list[tuple[str, int]], int]] = []
    for at, spec in writes:
        if not changes or mirrors(spec) != changes[-1][1]:
            changes.append((at, mirrors(spec), pending_weight(spec, new)))
    assert [(mirrored, weight) for _, mirrored, weight in changes[:3]] == [
        ([(f"{new}-serve-svc", 10)], 0),
        ([(f"{new}-serve-svc", 30)], 0),
        ([], 50),  # the traffic step: the mirror ends with the write that moves the weight
    ]
    assert all(not mirrors(spec) for _, spec in writes if pending_weight(spec, new) > 0)
    # each timed pause of a mirror step is one durable timer from the step's start
    history_dues = timer_dues(await handle.fetch_history())
    times = [at for at, _, _ in changes[:3]]
    assert steps_timed_by_timers(times, PAUSE, history_dues, tolerance=timedelta(seconds=2)) == []
    reasons = [event.reason for event in world.events]
    assert reasons.count("RolloutMirror") == 2
    assert reasons.count("RolloutMirrorEnded") == 1
    assert condition_of(final, "RolloutMirror") == ("", "")


async def test_an_abort_ends_the_mirror(time_skipping_env: WorkflowEnvironment) -> None:
    plan = {"steps": [{"mirror": 20, "pause": "indefinite"}, {"traffic": 50}]}
    env, world = time_skipping_env, FakeRayWorld()
    async with upgrading_with(env, world, plan) as (handle, old, new):

        async def mirroring_with_capacity() -> bool:
            pending = (await status_of(handle))["pendingServiceStatus"]
            spec = (world.route or {}).get("spec") or {}
            return mirrors(spec) == [(f"{new}-serve-svc", 20)] and pending.get("targetCapacity") == 50

        # the first capacity step is taken although the plan paused, so the copies find replicas
        await eventually(env, mirroring_with_capacity, step=timedelta(milliseconds=500))
        await handle.execute_update("abort", result_type=dict)

        async def back_on_the_old_cluster_without_a_mirror() -> bool:
            spec = (world.route or {}).get("spec") or {}
            status = await status_of(handle)
            return not mirrors(spec) and condition_of(status, "RolloutMirror") == ("", "")

        await eventually(env, back_on_the_old_cluster_without_a_mirror, step=timedelta(milliseconds=500))
    assert (world.route or {})["spec"]["rules"][0]["backendRefs"][0]["name"] == f"{old}-serve-svc"
