"""A spec changed again in the middle of an incremental upgrade, at workflow level on the time-skipping
server: a third spec (A -> B -> C) rolls back to A, then upgrades to C on a fresh cluster; a revert (A -> B
-> A) after a worker restart rolls back; and a third spec applied during that rollback never reaches the
active cluster's Serve config (kuberay#4717: after an operator restart KubeRay's empty in-memory cache lets
it through)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    INCREMENTAL,
    SERVE_CONFIG_V1,
    WORKFLOW_ID,
    Handle,
    condition_of,
    eventually,
    rayservice_manifest,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.worker import running_worker
from tests.workflows.rayservice.upgrade_support import (
    active_of,
    apply,
    pending_of,
    ready_cluster,
    routed,
    status_when,
    traffic_moved_to_pending,
    with_condition,
)
from workflows.rayservice.workflow import RayServiceWorkflow


def spec(version: str) -> dict[str, Any]:
    """Version `version` of both the cluster (an env var) and the Serve config (its import path)."""
    serve = SERVE_CONFIG_V1.replace("app:deployment", f"app:{version}")
    return rayservice_manifest(
        version=version, strategy=INCREMENTAL, autoscaling=True, deletion_delay=5, serve_config=serve
    )


def imports_put_to(world: FakeRayWorld, cluster: str, since: int = 0) -> set[str]:
    """The import paths of every Serve config PUT to `cluster` after log entry `since`."""
    return {
        app["import_path"]
        for act in world.log[since:]
        if act.verb == "put" and act.name == cluster
        for app in act.detail.get("applications") or []
    }


def names_of(status: dict[str, Any]) -> tuple[str, str]:
    return active_of(status), pending_of(status)


async def upgrade_under_way(env: WorkflowEnvironment, world: FakeRayWorld, handle: Handle) -> tuple[str, str]:
    """Deploy A, apply B and return (A's cluster, B's cluster) once traffic moves to B."""
    old = await ready_cluster(env, handle)
    await eventually(env, routed(world))
    await apply(handle, spec("v2"))
    status = await status_when(env, handle, traffic_moved_to_pending, step=timedelta(milliseconds=500))
    return old, pending_of(status)


async def rolling_back(env: WorkflowEnvironment, handle: Handle) -> dict[str, Any]:
    return await status_when(
        env, handle, with_condition("RollbackInProgress"), step=timedelta(milliseconds=200)
    )


async def test_a_third_spec_rolls_back_to_the_original_then_upgrades_to_it(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with running_worker(
        env.client, activities=world.activities(), workflows=[RayServiceWorkflow], replay_every_task=False
    ) as queue:
        handle: Handle = await env.client.start_workflow(
            "RayServiceWorkflow", spec("v1"), id=WORKFLOW_ID, task_queue=queue, result_type=dict
        )
        old, second = await upgrade_under_way(env, world, handle)
        since = len(world.log)
        await apply(handle, spec("v3"))
        during = await rolling_back(env, handle)
        assert names_of(during) == (old, second)

        async def third_serves() -> bool:
            active, pending = names_of(await status_of(handle))
            return active not in (old, second) and not pending and old not in world.clusters

        await eventually(env, third_serves)
        final = await until_ready(env, handle)
    third = names_of(final)[0]
    assert second not in world.clusters
    assert world.live_clusters() == [third]
    # A's cluster only ever got A's Serve config (target capacities back to 100, then down to 0), B's
    # cluster nothing after the third spec, and C's config went only to C's cluster.
    assert imports_put_to(world, old) == {"app:v1"}
    assert imports_put_to(world, second, since) <= {"app:v2"}
    assert imports_put_to(world, third) == {"app:v3"}
    env_vars = world.clusters[third].body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    assert env_vars == [{"name": "APP_VERSION", "value": "v3"}]
    assert condition_of(final, "RollbackInProgress") == ("", "")
    assert condition_of(final, "UpgradeInProgress") == ("False", "NoPendingCluster")


async def test_a_revert_after_a_worker_restart_rolls_back_and_a_third_spec_then_never_reaches_the_active(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    queue = "third-spec-restart"

    def worker(replay_every_task: bool = True) -> Any:
        return running_worker(
            env.client,
            activities=world.activities(),
            workflows=[RayServiceWorkflow],
            task_queue=queue,
            # Workers that are stopped keep no workflow cache, hence no sticky queue: the time-skipping server
            # would hand the next task to the stopped worker's sticky queue and never time it out.
            replay_every_task=replay_every_task,
        )

    async with worker():
        handle: Handle = await env.client.start_workflow(
            "RayServiceWorkflow", spec("v1"), id=WORKFLOW_ID, task_queue=queue, result_type=dict
        )
        old, second = await upgrade_under_way(env, world, handle)
    # The worker is gone; a new one replays the history and goes on.
    async with worker():
        await apply(handle, spec("v1"))
        during = await rolling_back(env, handle)
        assert condition_of(during, "RollbackInProgress") == ("True", "DesiredClusterSpecChanged")
    async with worker(replay_every_task=False):
        since = len(world.log)
        await apply(handle, spec("v3"))

        async def back_on_old_then_third() -> bool:
            active, pending = names_of(await status_of(handle))
            return active not in (old, second) and not pending

        await eventually(env, back_on_old_then_third)
        final = await until_ready(env, handle)
    # Serve config of the original cluster stayed A's through the restarts and the third spec.
    assert imports_put_to(world, old) == {"app:v1"}
    assert imports_put_to(world, second, since) <= {"app:v2"}
    assert imports_put_to(world, names_of(final)[0]) == {"app:v3"}
