"""An example pipeline of your own: two RayJobs in sequence (prepare the data, then train), then a RayService
upgrade gated on both (serve the new model only when both jobs succeeded), each a step that waits for its
result through raypilot's Nexus service (docs/nexus.md).

Run it against a Temporal server where a raypilot worker runs and the endpoint exists:

    temporal operator nexus endpoint create --name raypilot \\
      --target-namespace default --target-task-queue raypilot
    python examples/pipeline/pipeline.py \\
      examples/pipeline/prepare.yaml examples/pipeline/train.yaml examples/pipeline/serve.yaml

It starts a worker of its own (task queue `pipeline`), runs the pipeline once and prints its result.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from raypilot.steps import UpgradeOutcome, run_rayjob, run_rayjob_child, upgrade_rayservice

SUCCEEDED = "SUCCEEDED"


@dataclass
class PipelineInput:
    jobs: list[dict[str, Any]]  # RayJob manifests, run in order
    service: dict[str, Any]  # the RayService manifest to apply once every job succeeded
    endpoint: str = "raypilot"  # the Nexus endpoint of raypilot's service
    # Run the jobs as child workflows on this task queue instead (a caller on raypilot's own namespace).
    child_task_queue: str | None = None


@dataclass
class PipelineResult:
    jobs: list[dict[str, Any]] = field(default_factory=list)  # each job's final status, in order
    upgrade: UpgradeOutcome | None = None  # None: not attempted
    skipped: str = ""  # why the upgrade was not attempted


@workflow.defn(name="RayPipeline")
class RayPipeline:
    @workflow.run
    async def run(self, request: PipelineInput) -> PipelineResult:
        result = PipelineResult()
        for manifest in request.jobs:
            if request.child_task_queue is not None:
                status = await run_rayjob_child(manifest, task_queue=request.child_task_queue)
            else:
                status = await run_rayjob(manifest, endpoint=request.endpoint)
            result.jobs.append(status)
            if status.get("jobStatus") != SUCCEEDED:
                name = manifest["metadata"]["name"]
                result.skipped = (
                    f"RayJob {name} ended {status.get('jobStatus') or status.get('jobDeploymentStatus')}"
                )
                return result
        result.upgrade = await upgrade_rayservice(request.service, endpoint=request.endpoint)
        return result


async def main(paths: list[str]) -> None:
    from pathlib import Path

    import yaml
    from temporalio.client import Client
    from temporalio.worker import Worker

    documents = [yaml.safe_load(Path(path).read_text()) for path in paths]  # noqa: ASYNC240 (at start)
    client = await Client.connect(
        os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"),
        namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
    )
    async with Worker(client, task_queue="pipeline", workflows=[RayPipeline]):
        result = await client.execute_workflow(
            RayPipeline.run,
            PipelineInput(jobs=documents[:-1], service=documents[-1]),
            id=f"pipeline-{uuid.uuid4().hex[:8]}",
            task_queue="pipeline",
        )
    for status in result.jobs:
        print("job:", status.get("jobDeploymentStatus"), status.get("jobStatus"))
    print("upgrade:", result.upgrade or result.skipped)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
