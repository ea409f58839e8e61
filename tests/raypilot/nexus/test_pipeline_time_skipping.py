"""The example pipeline (examples/pipeline/pipeline.py) on the time-skipping test server with fake worlds:
two RayJobs, then a RayService upgrade gated on them, each a step through raypilot's Nexus service
(raypilot/nexus/handlers.py), or the RayJobs as child workflows.

The test server serves Nexus, but does not skip time while a Nexus operation is in flight (measured: a
backing workflow's 20 s timer took 20 s of real time), so these scenarios use no long timers."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import NexusOperationError
from temporalio.service import RPCError

from examples.pipeline.pipeline import PipelineInput, PipelineResult, RayPipeline
from models.naming import upgrade_outcome_workflow_id
from raypilot.steps import validation_failure
from raypilot.testing.rayjob_scenarios import rayjob_manifest
from raypilot.testing.rayjob_world import FAILS, SUCCEEDS, FakeWorld
from raypilot.testing.rayservice_scenarios import rayservice_manifest
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.time_skipping import query_status
from tests.raypilot.nexus.nexus_support import PIPELINE_QUEUE, NexusStack, raypilot_with_nexus

pytestmark = pytest.mark.timeout(240)

JOBS = [rayjob_manifest("prepare"), rayjob_manifest("train")]


async def run_pipeline(stack: NexusStack, request: PipelineInput, run: str) -> PipelineResult:
    return await stack.client.execute_workflow(
        RayPipeline.run, request, id=f"pipeline-{run}", task_queue=PIPELINE_QUEUE
    )


async def active_cluster(client: Client, name: str = "svc") -> str:
    status = await query_status(client.get_workflow_handle(f"rayservice/default/{name}"))
    cluster: str = status["activeServiceStatus"]["rayClusterName"]
    return cluster


async def exists(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except RPCError:
        return False
    return True


async def test_two_rayjobs_then_an_upgrade_through_nexus_and_the_same_request_again_starts_nothing(
    time_skipping_env: Any,
) -> None:
    jobs, services = FakeWorld(), FakeRayWorld()
    async with raypilot_with_nexus(time_skipping_env.client, jobs, services) as stack:
        client = stack.client
        created = await run_pipeline(
            stack, PipelineInput(JOBS, rayservice_manifest(), endpoint=stack.endpoint), "create"
        )
        assert [status["jobStatus"] for status in created.jobs] == ["SUCCEEDED", "SUCCEEDED"]
        assert [status["jobDeploymentStatus"] for status in created.jobs] == ["Complete", "Complete"]
        assert created.upgrade is not None
        assert (created.upgrade.result, created.upgrade.generation) == ("promoted", 1)
        first_cluster = await active_cluster(client)
        assert created.upgrade.ray_cluster_name == first_cluster
        # The runs are those of the contract ids, the ones `raypilot status` shows.
        for manifest, status in zip(JOBS, created.jobs, strict=True):
            shown = await query_status(
                client.get_workflow_handle(f"rayjob/default/{manifest['metadata']['name']}")
            )
            assert shown["jobId"] == status["jobId"]

        upgraded = await run_pipeline(
            stack, PipelineInput(JOBS, rayservice_manifest(version="v2"), endpoint=stack.endpoint), "upgrade"
        )
        # The finished RayJobs answer their final status: nothing ran again.
        assert [status["jobId"] for status in upgraded.jobs] == [status["jobId"] for status in created.jobs]
        assert jobs.submissions == 2
        assert upgraded.upgrade is not None
        assert (upgraded.upgrade.result, upgraded.upgrade.generation) == ("promoted", 2)
        new_cluster = await active_cluster(client)
        assert new_cluster != first_cluster
        assert upgraded.upgrade.ray_cluster_name == new_cluster
        assert "serving on RayCluster" in upgraded.upgrade.reason
        # The generation's outcome was waited for by the workflow of its contract id.
        waiter = client.get_workflow_handle(upgrade_outcome_workflow_id("default", "svc", 2))
        assert (await waiter.describe()).workflow_type == "RayServiceUpgradeWorkflow"

        # The same manifest again: its generation settled, answered at once by the same waiting workflow's id.
        again = await run_pipeline(
            stack, PipelineInput(JOBS, rayservice_manifest(version="v2"), endpoint=stack.endpoint), "again"
        )
        assert again.upgrade == upgraded.upgrade
        assert await active_cluster(client) == new_cluster


async def test_a_failed_rayjob_gates_the_upgrade(time_skipping_env: Any) -> None:
    jobs, services = FakeWorld(job_scripts=[SUCCEEDS, FAILS]), FakeRayWorld()
    async with raypilot_with_nexus(time_skipping_env.client, jobs, services) as stack:
        result = await run_pipeline(
            stack, PipelineInput(JOBS, rayservice_manifest(), endpoint=stack.endpoint), "gated"
        )
        assert [status["jobStatus"] for status in result.jobs] == ["SUCCEEDED", "FAILED"]
        assert result.upgrade is None
        assert result.skipped == "RayJob train ended FAILED"
        assert not await exists(stack.client, "rayservice/default/svc")


async def test_rayjobs_as_child_workflows_then_the_upgrade_through_nexus(time_skipping_env: Any) -> None:
    jobs, services = FakeWorld(), FakeRayWorld()
    async with raypilot_with_nexus(time_skipping_env.client, jobs, services) as stack:
        request = PipelineInput(
            JOBS, rayservice_manifest(), endpoint=stack.endpoint, child_task_queue=stack.task_queue
        )
        result = await run_pipeline(stack, request, "children")
        assert [status["jobStatus"] for status in result.jobs] == ["SUCCEEDED", "SUCCEEDED"]
        assert result.upgrade is not None
        assert result.upgrade.result == "promoted"
        shown = await query_status(stack.client.get_workflow_handle("rayjob/default/train"))
        assert shown["jobId"] == result.jobs[1]["jobId"]


@pytest.mark.parametrize(
    ("jobs", "service", "named", "never_started"),
    [
        (
            [rayjob_manifest("prepare", submissionMode="Sideways")],
            rayservice_manifest(),
            "submissionMode",
            "rayjob/default/prepare",
        ),
        (
            [],
            {
                **rayservice_manifest(),
                "spec": {**rayservice_manifest()["spec"], "upgradeStrategy": {"type": "Bogus"}},
            },
            "Spec.UpgradeStrategy.Type",
            "rayservice/default/svc",
        ),
    ],
)
async def test_a_bad_manifest_fails_the_operation_naming_the_field_and_creates_nothing(
    time_skipping_env: Any,
    jobs: list[dict[str, Any]],
    service: dict[str, Any],
    named: str,
    never_started: str,
) -> None:
    async with raypilot_with_nexus(time_skipping_env.client, FakeWorld(), FakeRayWorld()) as stack:
        with pytest.raises(WorkflowFailureError) as failure:
            await run_pipeline(stack, PipelineInput(jobs, service, endpoint=stack.endpoint), "bad")
        nexus_error = failure.value.cause
        assert isinstance(nexus_error, NexusOperationError)
        cause = validation_failure(nexus_error)
        assert cause is not None
        assert cause.non_retryable
        assert named in cause.message
        assert not await exists(stack.client, never_started)
