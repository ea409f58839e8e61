"""What the RayService workflow tests on the fake world share: the manifest with a raypilot.io/rollout
annotation, a RayService that serves (`serving`), the steps that start an upgrade, the cluster names in a
status, and the waits for what an upgrade does (`status_when`, and the probes they hand to `eventually`:
promoted, rolled back, a cluster deleted)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from models.rollout import ANNOTATION_ROLLOUT
from raypilot.testing.rayservice_scenarios import (
    INCREMENTAL,
    WORKFLOW_ID,
    Handle,
    condition_of,
    eventually,
    rayservice_manifest,
    running_rayservice,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from workflows.rayservice.state import RayServiceState

Probe = Callable[[], Awaitable[bool]]


def rollout_manifest(
    version: str,
    rollout: dict[str, Any] | None,
    incremental: bool = True,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A RayService upgraded incrementally (with autoscaling, which that strategy needs) or by NewCluster,
    with `rollout` as its raypilot.io/rollout annotation (None: no annotation) beside `annotations`, and a
    short deletion delay."""
    rollout_annotation = {ANNOTATION_ROLLOUT: json.dumps(rollout)} if rollout is not None else {}
    return rayservice_manifest(
        version=version,
        strategy=INCREMENTAL if incremental else None,
        autoscaling=incremental,
        deletion_delay=5,
        annotations={**rollout_annotation, **(annotations or {})} or None,
    )


async def ready_cluster(env: WorkflowEnvironment, handle: Handle) -> str:
    """Waits until the RayService is Ready with no pending cluster; the cluster that serves it then."""
    return str((await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"])


@asynccontextmanager
async def serving(
    env: WorkflowEnvironment,
    world: FakeRayWorld,
    manifest: dict[str, Any],
    workflow_id: str = WORKFLOW_ID,
    carried: RayServiceState | None = None,
    sandboxed: bool = False,
) -> AsyncIterator[tuple[Handle, str]]:
    """`running_rayservice` from the moment the RayService is ready: (handle, the cluster that serves it)."""
    async with running_rayservice(
        env, world, manifest, workflow_id=workflow_id, carried=carried, sandboxed=sandboxed
    ) as handle:
        yield handle, await ready_cluster(env, handle)


async def apply(handle: Handle, manifest: dict[str, Any]) -> dict[str, Any]:
    """The `apply` update; its result says the generation the manifest got."""
    result: dict[str, Any] = await handle.execute_update("apply", manifest, result_type=dict)
    return result


async def start_stuck_upgrade(
    env: WorkflowEnvironment, world: FakeRayWorld, handle: Handle, upgrade: dict[str, Any], serve_mode: str
) -> str:
    """Once the RayService is ready, applies `upgrade` whose new clusters' Serve stays in `serve_mode`
    ("deploying": never ready; "failed": DEPLOY_FAILED); the cluster that served before."""
    old = await ready_cluster(env, handle)
    world.serve_mode_for_new_clusters = serve_mode
    await apply(handle, upgrade)
    return old


@asynccontextmanager
async def stuck_upgrade(
    env: WorkflowEnvironment,
    world: FakeRayWorld,
    manifest: dict[str, Any],
    upgrade: dict[str, Any],
    serve_mode: str,
    workflow_id: str = WORKFLOW_ID,
) -> AsyncIterator[tuple[Handle, str]]:
    """`running_rayservice` of `manifest`, then `start_stuck_upgrade` to `upgrade` with the new clusters'
    Serve in `serve_mode`: (handle, the cluster that served before)."""
    async with running_rayservice(env, world, manifest, workflow_id=workflow_id) as handle:
        yield handle, await start_stuck_upgrade(env, world, handle, upgrade, serve_mode)


@asynccontextmanager
async def stuck_rollout_upgrade(
    env: WorkflowEnvironment,
    world: FakeRayWorld,
    rollout: dict[str, Any],
    serve_mode: str,
    incremental: bool = True,
) -> AsyncIterator[tuple[Handle, str]]:
    """`stuck_upgrade` from v1 to v2 of `rollout_manifest(rollout, incremental)`."""
    v1, v2 = (rollout_manifest(version, rollout, incremental) for version in ("v1", "v2"))
    async with stuck_upgrade(env, world, v1, v2, serve_mode) as upgrade:
        yield upgrade


def active_of(status: dict[str, Any]) -> str:
    """The active cluster's name in `status`, "" while there is none."""
    return str((status.get("activeServiceStatus") or {}).get("rayClusterName") or "")


def pending_of(status: dict[str, Any]) -> str:
    """The pending cluster's name in `status`, "" while there is none."""
    return str((status.get("pendingServiceStatus") or {}).get("rayClusterName") or "")


async def active_cluster(handle: Handle) -> str:
    return active_of(await status_of(handle))


async def pending_cluster(handle: Handle) -> str:
    return pending_of(await status_of(handle))


async def new_pending_cluster(
    env: WorkflowEnvironment, handle: Handle, step: timedelta = timedelta(milliseconds=200)
) -> str:
    """Advances workflow time as `eventually` does until the upgrade's new cluster is pending; its name."""

    async def pending() -> bool:
        return bool(await pending_cluster(handle))

    await eventually(env, pending, step=step)
    return await pending_cluster(handle)


async def status_when(
    env: WorkflowEnvironment,
    handle: Handle,
    holds: Callable[[dict[str, Any]], bool],
    step: timedelta = timedelta(seconds=1),
) -> dict[str, Any]:
    """Advances workflow time as `eventually` does until the status satisfies `holds`; that status."""
    status: dict[str, Any] = {}

    async def probe() -> bool:
        nonlocal status
        status = await status_of(handle)
        return holds(status)

    await eventually(env, probe, step=step)
    return status


def with_condition(
    condition_type: str, *, status: str | None = "True", reason: str | None = None
) -> Callable[[dict[str, Any]], bool]:
    """For `status_when`: the condition has that status (None: any) and that reason (None: any)."""

    def holds(rayservice_status: dict[str, Any]) -> bool:
        found_status, found_reason = condition_of(rayservice_status, condition_type)
        return status in (None, found_status) and reason in (None, found_reason)

    return holds


def traffic_moved_to_pending(status: dict[str, Any]) -> bool:
    """The first traffic step of an incremental upgrade (25 % at the least) reached its pending cluster."""
    pending = status.get("pendingServiceStatus") or {}
    return bool(pending.get("rayClusterName")) and pending.get("trafficRoutedPercent", 0) >= 25


def routed(world: FakeRayWorld) -> Probe:
    """The HTTPRoute of an incremental upgrade exists (the upgrade can move traffic)."""

    async def probe() -> bool:
        return world.route is not None

    return probe


def promoted_to(handle: Handle, new: str) -> Probe:
    async def probe() -> bool:
        return await active_cluster(handle) == new

    return probe


def promoted_away_from(handle: Handle, old: str) -> Probe:
    """The upgrade's new cluster serves (for tests that do not know its name)."""

    async def probe() -> bool:
        return await active_cluster(handle) not in ("", old)

    return probe


def upgrade_finished(handle: Handle, old: str) -> Probe:
    """A cluster other than `old` serves and none is pending: the upgrade away from `old` is over."""

    async def probe() -> bool:
        status = await status_of(handle)
        return active_of(status) not in ("", old) and not pending_of(status)

    return probe


def cluster_deleted(world: FakeRayWorld, name: str) -> Probe:
    """`name` was deleted (it may still be in the status: see `rolled_back_to`)."""

    async def probe() -> bool:
        return name not in world.clusters

    return probe


def only_cluster_left(world: FakeRayWorld, name: str) -> Probe:
    """Every other cluster was deleted: `name` is the only one the world still runs."""

    async def probe() -> bool:
        return world.live_clusters() == [name]

    return probe


def assert_rolled_back(
    final: dict[str, Any], world: FakeRayWorld, old: str, condition_type: str, reason: str
) -> str:
    """Asserts that the final status is back on `old`, its `condition_type` False for `reason`, and that one
    Warning Event said `reason`; that Event's message."""
    assert final["activeServiceStatus"]["rayClusterName"] == old, final["activeServiceStatus"]
    assert condition_of(final, condition_type) == ("False", reason), final["conditions"]
    events = [event for event in world.events if event.reason == reason]
    assert [event.type for event in events] == ["Warning"], events
    return events[0].message


def rolled_back_to(world: FakeRayWorld, handle: Handle, old: str) -> Probe:
    """The new cluster dropped: gone from the world and from the status. The status too, because the new
    cluster's name is in it a pass before the cluster exists (a full run found only the old one then)."""

    async def probe() -> bool:
        return world.live_clusters() == [old] and not await pending_cluster(handle)

    return probe
