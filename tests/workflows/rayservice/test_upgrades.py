"""RayServiceWorkflow changes by spec hash: NewCluster blue-green (Services switched, old cluster deleted
after the delay and its drain), worker groups appended (in place), strategy None and
ENABLE_ZERO_DOWNTIME=false (the cluster left alone as in KubeRay, with the ClusterSpecNotApplied condition and
a Warning event), Serve-config-only changes, and a newer spec replacing a pending cluster still being
built."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from models.operator import OperatorConfig
from raypilot.testing.rayservice_scenarios import (
    SERVE_CONFIG_V1,
    condition_of,
    eventually,
    rayservice_manifest,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    active_of,
    apply,
    cluster_deleted,
    pending_of,
    serving,
    status_when,
    stuck_upgrade,
)
from workflows.decisions.rayservice.drain import DRAIN_POLL, QUIET_READS_NEEDED


async def test_new_cluster_upgrade_switches_both_services_then_deletes_the_old_cluster_after_delay_and_drain(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """In Temporal's sandbox, as one upgrade of the suite (raypilot/testing/worker.py)."""
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest(deletion_delay=30), sandboxed=True) as (handle, old):
        assert await apply(handle, rayservice_manifest(version="v2", deletion_delay=30)) == {"generation": 2}

        upgrading = await status_when(
            env, handle, lambda status: bool(pending_of(status)), step=timedelta(milliseconds=100)
        )
        new = pending_of(upgrading)
        status = await until_ready(env, handle)
        assert active_of(status) == new
        assert new != old
        await eventually(env, cluster_deleted(world, old))
    assert world.selected_cluster("svc-head-svc") == new
    assert world.selected_cluster("svc-serve-svc") == new
    switched = world.acts("update", "Service")
    assert sorted(act.name for act in switched) == ["svc-head-svc", "svc-serve-svc"]
    [deleted] = world.acts("delete", "RayCluster")
    assert deleted.name == old
    # rayClusterDeletionDelaySeconds after the switch (a durable timer) the old cluster's drain starts, on by
    # default: it has no request in flight, so it goes after three zero readings DRAIN_POLL apart.
    delay = max(act.at for act in switched) + timedelta(seconds=30)
    reads = [(at, answer) for at, name, answer in world.in_flight_reads if name == old]
    assert [answer for _, answer in reads] == [0] * QUIET_READS_NEEDED
    for index, (at, _) in enumerate(reads):
        assert abs(at - delay - DRAIN_POLL * index) < timedelta(seconds=1)
    assert abs(deleted.at - delay - DRAIN_POLL * (QUIET_READS_NEEDED - 1)) < timedelta(seconds=1)
    # The new cluster runs the v2 spec; v1's serve config was PUT to it before it took traffic.
    env_vars = world.clusters[new].body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    assert env_vars == [{"name": "APP_VERSION", "value": "v2"}]
    assert [act.name for act in world.acts("put")] == [old, new]


async def test_appended_worker_group_updates_the_active_cluster_in_place(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, cluster):
        await apply(handle, rayservice_manifest(worker_groups=2))

        async def updated() -> bool:
            return bool(world.acts("update", "RayCluster"))

        await eventually(env, updated, step=timedelta(milliseconds=100))
        status = await until_ready(env, handle)
    assert world.live_clusters() == [cluster]
    assert active_of(status) == cluster
    groups = world.clusters[cluster].body["spec"]["workerGroupSpecs"]
    assert [group["groupName"] for group in groups] == ["group-0", "group-1"]
    assert world.clusters[cluster].body["metadata"]["annotations"]["ray.io/num-worker-groups"] == "2"
    assert len(world.acts("create", "RayCluster")) == 1


async def _spec_change_without_upgrade(
    env: WorkflowEnvironment, world: FakeRayWorld, strategy: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """Deploy v1, apply v2 of the cluster spec (and a new serve config) and return the cluster and the status
    once the change was reported as not applied."""
    serve_v2 = SERVE_CONFIG_V1.replace("num_replicas: 2", "num_replicas: 3")
    async with serving(env, world, rayservice_manifest(strategy=strategy)) as (handle, cluster):
        await apply(handle, rayservice_manifest(version="v2", strategy=strategy, serve_config=serve_v2))
        status: dict[str, Any] = {}

        async def reported() -> bool:
            nonlocal status
            status = await status_of(handle)
            return condition_of(status, "ClusterSpecNotApplied")[0] == "True" and len(world.acts("put")) == 2

        await eventually(env, reported, step=timedelta(milliseconds=100))
        await env.sleep(timedelta(minutes=5))  # later passes record nothing more
        return cluster, await until_ready(env, handle)


async def test_strategy_none_leaves_the_cluster_alone_as_kuberay_and_says_so(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    world = FakeRayWorld()
    cluster, status = await _spec_change_without_upgrade(time_skipping_env, world, {"type": "None"})
    assert world.live_clusters() == [cluster]
    assert active_of(status) == cluster
    assert condition_of(status, "UpgradeInProgress") == ("False", "NoPendingCluster")
    # As in KubeRay the RayCluster keeps its spec (its Pods would not be replaced anyway) ...
    assert not world.acts("update", "RayCluster")
    env_vars = world.clusters[cluster].body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0][
        "env"
    ]
    assert env_vars == [{"name": "APP_VERSION", "value": "v1"}]
    # ... while the serve config change is applied, and the status and one Warning Event say the truth.
    assert world.acts("put")[-1].detail["applications"][0]["deployments"][0]["num_replicas"] == 3
    assert condition_of(status, "ClusterSpecNotApplied") == ("True", "ZeroDowntimeUpgradeDisabled")
    [warning] = [event for event in world.events if event.type == "Warning"]
    assert warning.reason == "RayClusterSpecChangeNotApplied"
    assert "NOT applied" in warning.message
    assert f"default/{cluster}" in warning.message


async def test_zero_downtime_disabled_by_the_operator_behaves_like_strategy_none(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    world = FakeRayWorld(OperatorConfig(enable_zero_downtime=False))
    cluster, _ = await _spec_change_without_upgrade(time_skipping_env, world, None)
    assert world.live_clusters() == [cluster]
    assert not world.acts("update", "RayCluster")
    assert [event.reason for event in world.events if event.type == "Warning"] == [
        "RayClusterSpecChangeNotApplied"
    ]


async def test_strategy_none_condition_goes_when_the_spec_is_reverted(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world, strategy = time_skipping_env, FakeRayWorld(), {"type": "None"}
    async with serving(env, world, rayservice_manifest(strategy=strategy)) as (handle, _):
        await apply(handle, rayservice_manifest(version="v2", strategy=strategy))

        async def condition_is(value: str) -> bool:
            return condition_of(await status_of(handle), "ClusterSpecNotApplied")[0] == value

        await eventually(env, lambda: condition_is("True"), step=timedelta(milliseconds=100))
        await apply(handle, rayservice_manifest(version="v1", strategy=strategy))
        await eventually(env, lambda: condition_is(""), step=timedelta(milliseconds=100))
    assert not world.acts("update", "RayCluster")


async def test_serve_config_change_is_put_to_the_active_cluster_without_a_new_cluster(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    serve_v2 = SERVE_CONFIG_V1.replace("num_replicas: 2", "num_replicas: 3")
    async with serving(env, world, rayservice_manifest()) as (handle, cluster):
        assert await apply(handle, rayservice_manifest(serve_config=serve_v2)) == {"generation": 2}

        async def three_replicas() -> bool:
            status = await status_of(handle)
            apps = status["activeServiceStatus"].get("applicationStatuses") or {}
            replicas = apps.get("app", {}).get("serveDeploymentStatuses", {}).get("Model", {}).get("replicas")
            return replicas is not None and len(replicas) == 3

        await eventually(env, three_replicas)
    assert world.live_clusters() == [cluster]
    puts = world.acts("put")
    assert [act.name for act in puts] == [cluster, cluster]
    assert puts[-1].detail["applications"][0]["deployments"][0]["num_replicas"] == 3


async def test_a_newer_spec_replaces_the_pending_cluster_still_being_built(
    dev_server_env: WorkflowEnvironment,
) -> None:
    # On the dev server: the v3 `apply` cancels the wait on the pending cluster, and the time-skipping test
    # server rejects a task that cancels a wait whose completion arrived in the same task (ACTIVITY_UNKNOWN,
    # retried forever; about one run in fifteen hung here).
    env, world = dev_server_env, FakeRayWorld()
    name = f"newer-{uuid.uuid4().hex[:8]}"  # the dev server lives for the session: one id per run
    manifest = rayservice_manifest(name, deletion_delay=1)
    workflow_id = f"rayservice/default/{name}"
    v2 = rayservice_manifest(name, version="v2", deletion_delay=1)
    async with stuck_upgrade(env, world, manifest, v2, "deploying", workflow_id) as (handle, first):
        status = await status_when(env, handle, lambda status: bool(pending_of(status)))
        second = pending_of(status)
        assert condition_of(status, "UpgradeInProgress") == ("True", "BothActivePendingClustersExist")
        world.serve_mode_for_new_clusters = "running"
        third_spec = rayservice_manifest(name, version="v3", deletion_delay=1)
        assert await apply(handle, third_spec) == {"generation": 3}
        status = await status_when(
            env, handle, lambda status: active_of(status) not in (first, second) and not pending_of(status)
        )
        third = active_of(status)
        final = await until_ready(env, handle)
        await eventually(env, cluster_deleted(world, first))
        await eventually(env, cluster_deleted(world, second))
    assert active_of(final) == third
    assert world.live_clusters() == [third]
    assert sorted(act.name for act in world.acts("delete", "RayCluster")) == sorted([first, second])
    env_vars = world.clusters[third].body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    assert env_vars == [{"name": "APP_VERSION", "value": "v3"}]
