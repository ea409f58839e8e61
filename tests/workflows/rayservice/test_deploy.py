"""RayServiceWorkflow, first deployment on a fake world: cluster, Serve config, Services, Ready."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    condition_of,
    rayservice_manifest,
    running_rayservice,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld


async def test_first_deployment_creates_the_cluster_serves_and_becomes_ready(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    world = FakeRayWorld()
    async with running_rayservice(
        time_skipping_env, world, rayservice_manifest(), replay_every_task=True
    ) as handle:
        status = await until_ready(time_skipping_env, handle)
    [cluster] = world.live_clusters()
    assert cluster.startswith("svc-")
    assert len(cluster) == len("svc-") + 5
    assert status["activeServiceStatus"]["rayClusterName"] == cluster
    assert status["serviceStatus"] == "Running"
    assert condition_of(status, "Ready") == ("True", "NonZeroServeEndpoints")
    assert condition_of(status, "UpgradeInProgress") == ("False", "NoPendingCluster")
    assert status["numServeEndpoints"] == 2
    assert world.selected_cluster("svc-head-svc") == cluster
    assert world.selected_cluster("svc-serve-svc") == cluster
    apps = status["activeServiceStatus"]["applicationStatuses"]
    assert apps["app"]["status"] == "RUNNING"
    replicas = apps["app"]["serveDeploymentStatuses"]["Model"]["replicas"]
    assert [(r["rank"], r["worldSize"]) for r in replicas] == [(0, 2), (1, 2)]
