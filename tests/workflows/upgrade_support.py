"""What the RayService upgrade tests on the fake world share: the manifest with a raypilot.io/rollout
annotation, the steps that start an upgrade, and the probes they hand to `eventually` to wait for its end
(promoted or rolled back)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.testing import WorkflowEnvironment

from models.rollout import ANNOTATION_ROLLOUT
from raypilot.testing.rayservice_scenarios import (
    INCREMENTAL,
    Handle,
    rayservice_manifest,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld

Probe = Callable[[], Awaitable[bool]]


def rollout_manifest(
    version: str, rollout: dict[str, Any] | None, incremental: bool = True
) -> dict[str, Any]:
    """A RayService upgraded incrementally (with autoscaling, which that strategy needs) or by NewCluster,
    with `rollout` as its raypilot.io/rollout annotation (None: no annotation) and a short deletion delay."""
    return rayservice_manifest(
        version=version,
        strategy=INCREMENTAL if incremental else None,
        autoscaling=incremental,
        deletion_delay=5,
        annotations={ANNOTATION_ROLLOUT: json.dumps(rollout)} if rollout is not None else None,
    )


async def ready_cluster(env: WorkflowEnvironment, handle: Handle) -> str:
    """Waits until the RayService is Ready with no pending cluster; the cluster that serves it then."""
    return str((await until_ready(env, handle))["activeServiceStatus"]["rayClusterName"])


async def apply(handle: Handle, manifest: dict[str, Any]) -> dict[str, Any]:
    """The `apply` update; its result says the generation the manifest got."""
    result: dict[str, Any] = await handle.execute_update("apply", manifest, result_type=dict)
    return result


async def active_cluster(handle: Handle) -> str:
    """The active cluster's name, "" while there is none."""
    return str(((await status_of(handle)).get("activeServiceStatus") or {}).get("rayClusterName") or "")


async def pending_cluster(handle: Handle) -> str:
    """The pending cluster's name, "" while there is none."""
    return str(((await status_of(handle)).get("pendingServiceStatus") or {}).get("rayClusterName") or "")


def promoted_to(handle: Handle, new: str) -> Probe:
    async def probe() -> bool:
        return await active_cluster(handle) == new

    return probe


def promoted_away_from(handle: Handle, old: str) -> Probe:
    """The upgrade's new cluster serves (for tests that do not know its name)."""

    async def probe() -> bool:
        return await active_cluster(handle) not in ("", old)

    return probe


def cluster_deleted(world: FakeRayWorld, name: str) -> Probe:
    async def probe() -> bool:
        return name not in world.clusters

    return probe


def rolled_back_to(world: FakeRayWorld, handle: Handle, old: str) -> Probe:
    """The new cluster dropped: gone from the world and from the status. The status too, because the new
    cluster's name is in it a pass before the cluster exists (a full run found only the old one then)."""

    async def probe() -> bool:
        return world.live_clusters() == [old] and not await pending_cluster(handle)

    return probe
