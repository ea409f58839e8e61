"""The example pipeline (examples/pipeline/) end to end with simulated Ray on the real stack: the pipeline
runs on a worker of its own (the user's), calls raypilot's Nexus service through an endpoint made as
`temporal operator nexus endpoint create` makes it, and the RayJobs and the RayService upgrade run on the
real worker's workflows, under the contract ids."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.worker import Worker

from examples.pipeline.pipeline import PipelineInput, PipelineResult, RayPipeline
from raypilot.nexus.handlers import RayPilotNexusHandler
from tests.integration.stack import Stack
from tests.raypilot.nexus.nexus_support import create_endpoint

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(400)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline"


def example(name: str, namespace: str, version: str | None = None) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load((EXAMPLE / f"{name}.yaml").read_text())
    manifest["metadata"]["namespace"] = namespace
    if version is not None:
        manifest = copy.deepcopy(manifest)
        head = manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
        head["env"] = [{"name": "APP_VERSION", "value": version}]
    return manifest


async def test_the_example_pipeline_runs_its_rayjobs_then_upgrades_the_rayservice(kube_stack: Stack) -> None:
    stack = kube_stack
    namespace = stack.namespace()
    endpoint = f"raypilot-{uuid.uuid4().hex[:8]}"
    await create_endpoint(stack.client, endpoint, stack.task_queue)
    pipeline_queue = f"pipeline-{uuid.uuid4().hex[:8]}"
    jobs = [example("prepare", namespace), example("train", namespace)]

    async def run(service: dict[str, Any], run_id: str) -> PipelineResult:
        return await stack.client.execute_workflow(
            RayPipeline.run,
            PipelineInput(jobs, service, endpoint=endpoint),
            id=f"pipeline-{namespace}-{run_id}",
            task_queue=pipeline_queue,
        )

    async with (
        # raypilot's Nexus handlers beside the stack's worker, on its task queue (as worker.py has them).
        Worker(
            stack.client,
            task_queue=stack.task_queue,
            nexus_service_handlers=[RayPilotNexusHandler(stack.task_queue)],
        ),
        Worker(stack.client, task_queue=pipeline_queue, workflows=[RayPipeline]),
    ):
        created = await run(example("serve", namespace, version="v1"), "v1")
        assert [status["jobStatus"] for status in created.jobs] == ["SUCCEEDED", "SUCCEEDED"]
        assert created.upgrade is not None
        assert (created.upgrade.result, created.upgrade.generation) == ("promoted", 1)

        upgraded = await run(example("serve", namespace), "v2")
        # The finished RayJobs answer their final status; only the RayService changes.
        assert [status["jobId"] for status in upgraded.jobs] == [status["jobId"] for status in created.jobs]
        assert upgraded.upgrade is not None
        assert (upgraded.upgrade.result, upgraded.upgrade.generation) == ("promoted", 2)
        assert upgraded.upgrade.ray_cluster_name != created.upgrade.ray_cluster_name

    # What `raypilot status` shows for the same ids.
    service = await stack.status(stack.client.get_workflow_handle(f"rayservice/{namespace}/pipeline-serve"))
    assert service["activeServiceStatus"]["rayClusterName"] == upgraded.upgrade.ray_cluster_name
    for manifest, status in zip(jobs, upgraded.jobs, strict=True):
        handle = stack.client.get_workflow_handle(f"rayjob/{namespace}/{manifest['metadata']['name']}")
        shown = await stack.status(handle)
        assert (shown["jobStatus"], shown["jobId"]) == ("SUCCEEDED", status["jobId"])
