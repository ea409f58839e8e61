"""raypilot.io/rollout abortScaleDownDelaySeconds on the fake world (time-skipping server): an aborted
upgrade's new cluster is kept that long after the rollback (long past rayClusterDeletionDelaySeconds), the
status says until when, and one durable timer set for that instant deletes it, also after a
continue-as-new; a new upgrade meanwhile gets a cluster of its own, and deleting the RayService deletes the
kept one at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.cli.render import render_status
from raypilot.testing.rayservice_scenarios import Handle, condition_of, eventually, status_of
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    active_of,
    apply,
    cluster_deleted,
    new_pending_cluster,
    pending_of,
    rollout_manifest,
    serving,
    status_when,
    upgrade_finished,
)
from tests.workflows.timer_dues import timer_dues
from workflows.rayservice.state import RayServiceState

DELAY = 600
PLAN = {"steps": [{"pause": "indefinite"}, {"traffic": 50}], "abortScaleDownDelaySeconds": DELAY}
TOLERANCE = timedelta(seconds=1)


def kept(status: dict[str, Any]) -> bool:
    return condition_of(status, "AbortedClusterKept") == ("True", "KeptForDebugging")


def kept_condition(status: dict[str, Any]) -> dict[str, Any]:
    [condition] = [c for c in status["conditions"] if c["type"] == "AbortedClusterKept"]
    return condition


def kept_until(status: dict[str, Any]) -> datetime:
    """The instant the AbortedClusterKept condition names, and it is the instant its hold began plus the
    delay (the condition turned True then)."""
    text = kept_condition(status)["message"].split(" until ", 1)[1].split(" ", 1)[0]
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def deleted_at(world: FakeRayWorld, cluster: str) -> datetime:
    """When the fake world saw its one deletion of RayCluster `cluster`."""
    [deleted] = [act for act in world.acts("delete", "RayCluster") if act.name == cluster]
    return deleted.at


@asynccontextmanager
async def aborted_and_kept(
    env: WorkflowEnvironment, world: FakeRayWorld, carried: RayServiceState | None = None
) -> AsyncIterator[tuple[Handle, str, str, dict[str, Any]]]:
    """Serves v1 under PLAN, starts the upgrade to v2, aborts it once its new cluster is pending, and waits
    for the rollback to complete with the cluster kept: (handle, the cluster that served v1 and serves
    again, the kept cluster, that status)."""
    async with serving(env, world, rollout_manifest("v1", PLAN), carried=carried) as (handle, old):
        await apply(handle, rollout_manifest("v2", PLAN))
        new = await new_pending_cluster(env, handle)
        await handle.execute_update("abort", result_type=dict)
        status = await status_when(
            env, handle, lambda s: not pending_of(s) and kept(s), timedelta(milliseconds=500)
        )
        yield handle, old, new, status


async def test_the_aborted_cluster_is_kept_until_its_time_then_deleted_by_a_durable_timer(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with aborted_and_kept(env, world) as (handle, old, new, status):
        until = kept_until(status)
        condition = kept_condition(status)
        began = datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00"))
        assert abs(until - (began + timedelta(seconds=DELAY))) <= TOLERANCE
        assert f"RayCluster {new} of the aborted upgrade is kept for debugging until" in condition["message"]
        assert status["activeServiceStatus"]["rayClusterName"] == old
        shown = render_status("rayservice", status)  # what `raypilot status` prints
        assert f"kept for debugging until {until:%Y-%m-%dT%H:%M:%SZ}" in shown
        await env.sleep(timedelta(seconds=120))  # far past the 5 s deletion delay: still there
        assert new in world.clusters
        assert kept(await status_of(handle))
        await eventually(env, cluster_deleted(world, new), step=timedelta(seconds=30))
        final = await status_of(handle)
        history = await handle.fetch_history()
    assert condition_of(final, "AbortedClusterKept") == ("", "")
    assert any(abs(due - until) <= TOLERANCE for due in timer_dues(history))
    assert deleted_at(world, new) >= until - TOLERANCE
    reasons = [event.reason for event in world.events]
    assert reasons.count("KeptForDebugging") == 1


async def test_the_hold_survives_continue_as_new(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    # Serving v1 and the aborted v2 write ~180 events, the upgrade to v3 ~180 more: one continue-as-new,
    # during the hold (each one more cancels waits, and so risks the test server's defect: time_skipping.py)
    knob = RayServiceState(manifest=rollout_manifest("v1", PLAN), continue_as_new_at_history_length=250)
    async with aborted_and_kept(env, world, carried=knob) as (handle, old, new, status):
        until = kept_until(status)
        condition = kept_condition(status)
        began = datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00"))
        # an upgrade to v3 during the hold (no pause: no update meets a run continuing as new)
        await apply(handle, rollout_manifest("v3", {**PLAN, "steps": [{"traffic": 50}]}))
        await eventually(env, upgrade_finished(handle, old), step=timedelta(seconds=1))
        await eventually(env, cluster_deleted(world, old), step=timedelta(seconds=1))
        assert active_of(await status_of(handle)) != new
        history = await handle.fetch_history()  # the run that waits out the rest of the hold
        await eventually(env, cluster_deleted(world, new), step=timedelta(seconds=30))
    started = history.events[0]
    assert started.workflow_execution_started_event_attributes.continued_execution_run_id
    assert started.event_time.ToDatetime(tzinfo=UTC) > began  # it began during the hold, carrying its due
    assert any(abs(due - until) <= TOLERANCE for due in timer_dues(history))
    assert deleted_at(world, new) >= until - TOLERANCE


async def test_a_new_upgrade_during_the_hold_gets_its_own_cluster(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with aborted_and_kept(env, world) as (handle, _, kept_cluster, status):
        until = kept_until(status)
        await apply(handle, rollout_manifest("v3", PLAN))
        third = await new_pending_cluster(env, handle)
        assert third != kept_cluster
        await handle.execute_update("promote", result_type=dict)

        async def promoted() -> bool:
            status = await status_of(handle)
            return status["activeServiceStatus"]["rayClusterName"] == third and not pending_of(status)

        await eventually(env, promoted, step=timedelta(seconds=1))
        assert kept_cluster in world.clusters  # neither adopted nor deleted with the old cluster
        await eventually(env, cluster_deleted(world, kept_cluster), step=timedelta(seconds=30))
    assert deleted_at(world, kept_cluster) >= until - TOLERANCE


async def test_deleting_the_rayservice_deletes_the_kept_cluster_at_once(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with aborted_and_kept(env, world) as (handle, old, new, _):
        result = await handle.execute_update("delete", result_type=dict)
    assert {f"RayCluster/{old}", f"RayCluster/{new}"} <= set(result["deleted"])
    assert new not in world.clusters
