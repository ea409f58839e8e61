"""Revision history and `undo` (issue #18) on the fake world (time-skipping server): each applied spec is a
revision with its outcome; an undo inside the deletion delay moves the traffic back to the previous cluster
(no new RayCluster), outside it upgrades a new cluster to the old spec; a bad undo changes nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from models.rollout import ANNOTATION_ROLLOUT
from raypilot.testing.rayservice_scenarios import (
    INCREMENTAL,
    Handle,
    eventually,
    rayservice_manifest,
    status_of,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import active_of, apply, cluster_deleted, serving
from workflows.rayservice.state import RayServiceState

DELAY = 60


def manifest(
    version: str,
    *,
    incremental: bool = False,
    limit: int | None = None,
    rollout: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if limit is not None:
        rollout = {**(rollout or {}), "revisionHistoryLimit": limit}
    return rayservice_manifest(
        version=version,
        strategy=INCREMENTAL if incremental else None,
        autoscaling=incremental,
        deletion_delay=DELAY,
        annotations={ANNOTATION_ROLLOUT: json.dumps(rollout)} if rollout is not None else None,
    )


def outcomes(status: dict[str, Any]) -> list[tuple[int, str]]:
    return [(row["revision"], row["outcome"]) for row in status.get("revisions") or []]


async def upgraded(env: WorkflowEnvironment, handle: Handle, version: str, **options: Any) -> str:
    """Applies `version` and waits until it is promoted; the new active cluster."""
    await apply(handle, manifest(version, **options))

    async def promoted() -> bool:
        return outcomes(await status_of(handle))[-1][1] == "Promoted"

    await eventually(env, promoted, step=timedelta(milliseconds=500))
    return active_of(await status_of(handle))


@asynccontextmanager
async def upgraded_once(
    env: WorkflowEnvironment, world: FakeRayWorld, **options: Any
) -> AsyncIterator[tuple[Handle, str, str]]:
    """v1 serving, then v2 applied and promoted, both with the manifest's `options`: (handle, v1's cluster,
    v2's cluster)."""
    async with serving(env, world, manifest("v1", **options)) as (handle, first):
        yield handle, first, await upgraded(env, handle, "v2", **options)


async def test_history_lists_each_revision_with_its_outcome(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgraded_once(env, world) as (handle, first, second):
        status = await status_of(handle)
        rows: list[dict[str, Any]] = await handle.query("revisions", result_type=list)
    assert outcomes(status) == [(1, "Promoted"), (2, "Promoted")]
    assert [row["rayClusterName"] for row in status["revisions"]] == [first, second]
    assert (
        "manifest" not in status["revisions"][0]
    )  # the status stays small; the manifests are in `revisions`
    assert rows[0]["manifest"]["spec"] == manifest("v1")["spec"]
    assert rows[0]["specHash"] != rows[1]["specHash"]


async def test_undo_inside_the_window_moves_traffic_back_without_a_new_cluster(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgraded_once(env, world) as (handle, old, new):
        created = len(world.acts("create", "RayCluster"))
        assert old in world.clusters  # kept for rayClusterDeletionDelaySeconds after the promotion
        result = await handle.execute_update("undo", {}, result_type=dict)
        assert (result["revision"], result["how"]) == (1, "InPlace")
        undone_at = await _now(env)

        async def back_on_old() -> bool:
            return (
                world.selected_cluster("svc-serve-svc") == old and active_of(await status_of(handle)) == old
            )

        await eventually(env, back_on_old, step=timedelta(milliseconds=200))
        assert await _now(env) - undone_at < timedelta(seconds=5)
        await eventually(env, cluster_deleted(world, new))
        status = await status_of(handle)
    assert len(world.acts("create", "RayCluster")) == created  # no new cluster
    assert outcomes(status) == [(1, "Promoted"), (2, "Promoted"), (3, "Promoted")]
    assert status["revisions"][-1]["undoOf"] == 1
    assert status["revisions"][-1]["rayClusterName"] == old


async def test_undo_outside_the_window_upgrades_a_new_cluster_to_the_old_spec(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgraded_once(env, world) as (handle, old, new):
        await eventually(env, cluster_deleted(world, old), step=timedelta(seconds=10))  # the window passed
        result = await handle.execute_update("undo", {"toRevision": 1}, result_type=dict)
        assert result["how"] == "Upgrade"

        async def on_a_third_cluster() -> bool:
            status = await status_of(handle)
            return active_of(status) not in ("", old, new) and outcomes(status)[-1][1] == "Promoted"

        await eventually(env, on_a_third_cluster, step=timedelta(milliseconds=500))
        third = active_of(await status_of(handle))
    body = world.clusters[third].body
    env_vars = body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    assert env_vars == [{"name": "APP_VERSION", "value": "v1"}]


async def test_an_unknown_revision_is_rejected_and_nothing_changes(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, manifest("v1", limit=2)) as (handle, _):
        await upgraded(env, handle, "v2", limit=2)
        await upgraded(env, handle, "v3", limit=2)
        before = await status_of(handle)
        acts = len(world.log)
        for request, message in (
            (
                {"toRevision": 1},
                "revision 1 is not in the history of RayService default/svc (revisions kept: 2, 3)",
            ),
            ({"toRevision": 3}, "revision 3 is the current revision"),
            ({"toRevision": "two"}, "toRevision must be a revision number"),
        ):
            with pytest.raises(WorkflowUpdateFailedError) as failed:
                await handle.execute_update("undo", request, result_type=dict)
            assert message in str(failed.value.cause)
        after = await status_of(handle)
    assert outcomes(before) == outcomes(after) == [(2, "Promoted"), (3, "Promoted")]
    assert len(world.log) == acts


async def test_incremental_undo_inside_the_window_promotes_the_old_cluster_at_once(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with upgraded_once(env, world, incremental=True) as (handle, old, _):
        created = len(world.acts("create", "RayCluster"))
        result = await handle.execute_update("undo", {}, result_type=dict)
        assert result["how"] == "InPlace"
        undone_at = await _now(env)

        async def back_on_old() -> bool:
            return active_of(await status_of(handle)) == old

        await eventually(env, back_on_old, step=timedelta(milliseconds=200))
        took = await _now(env) - undone_at
    assert len(world.acts("create", "RayCluster")) == created
    assert took < timedelta(seconds=10)  # not the steps of intervalSeconds a new upgrade walks


async def test_retry_starts_a_rolled_back_upgrade_of_the_same_spec_again(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    rollout: dict[str, Any] = {"onUnhealthy": "Abort"}
    async with serving(env, world, manifest("v1", rollout=rollout)) as (handle, old):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("retry", result_type=dict)
        assert "no aborted upgrade of the current spec of RayService default/svc" in str(refused.value.cause)
        world.serve_mode_for_new_clusters = "failed"
        await apply(handle, manifest("v2", rollout=rollout))

        async def rolled_back() -> bool:
            status = await status_of(handle)
            return outcomes(status)[-1] == (2, "RolledBack") and world.live_clusters() == [old]

        await eventually(env, rolled_back, step=timedelta(milliseconds=500))
        world.serve_mode_for_new_clusters = "running"  # the cause was fixed (e.g. a model store came back)
        result = await handle.execute_update("retry", result_type=dict)
        assert result["control"] == "retry"

        async def promoted() -> bool:
            status = await status_of(handle)
            return active_of(status) not in ("", old) and outcomes(status)[-1] == (2, "Promoted")

        await eventually(env, promoted, step=timedelta(milliseconds=500))
        status = await status_of(handle)
    assert status["revisions"][-1]["generation"] == 2  # the same revision, not a new one


async def test_the_history_is_carried_through_continue_as_new(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    knob = RayServiceState(manifest=manifest("v1"), continue_as_new_at_history_length=72)
    async with serving(env, world, manifest("v1"), carried=knob) as (handle, old):
        first_run = (await handle.describe()).run_id
        await upgraded(env, handle, "v2")
        assert (await handle.describe()).run_id != first_run  # continued as new during the upgrade
        result = await handle.execute_update("undo", {}, result_type=dict)

        async def back_on_old() -> bool:
            return active_of(await status_of(handle)) == old

        await eventually(env, back_on_old, step=timedelta(milliseconds=200))
        status = await status_of(handle)
    assert result["how"] == "InPlace"
    assert outcomes(status) == [(1, "Promoted"), (2, "Promoted"), (3, "Promoted")]


async def _now(env: WorkflowEnvironment) -> Any:
    return await env.get_current_time()
