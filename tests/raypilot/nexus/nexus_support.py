"""The Nexus service on fake worlds: one worker with raypilot's workflows, the `raypilot` Nexus handlers and
the fake activities of both a RayJob world and a RayService world (the activities both declare answer from
the world of the calling workflow), an endpoint targeting its task queue, and a worker of the user's own for
the example pipeline (examples/pipeline/pipeline.py)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from temporalio import activity
from temporalio.api.nexus.v1 import EndpointSpec, EndpointTarget
from temporalio.api.operatorservice.v1 import CreateNexusEndpointRequest
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from examples.pipeline.pipeline import RayPipeline
from raypilot.nexus.handlers import RayPilotNexusHandler
from raypilot.testing.rayjob_world import FakeWorld
from raypilot.testing.rayservice_world import FakeRayWorld
from workflows.registry import WORKFLOWS

PIPELINE_QUEUE = "pipeline"


def _name(function: Callable[..., Any]) -> str:
    definition = activity._Definition.must_from_callable(function)
    assert definition.name is not None
    return definition.name


def _routed(name: str, for_jobs: Callable[..., Any], for_services: Callable[..., Any]) -> Callable[..., Any]:
    async def routed(*args: Any) -> Any:
        calling_service = activity.info().workflow_type == "RayServiceWorkflow"
        return await (for_services if calling_service else for_jobs)(*args)

    # The declared argument and result types, without the wrapped one's activity definition.
    functools.update_wrapper(routed, for_jobs, updated=())
    return activity.defn(name=name)(routed)


def both_worlds(jobs: FakeWorld, services: FakeRayWorld) -> list[Callable[..., Any]]:
    of_jobs = {_name(function): function for function in jobs.activities()}
    of_services = {_name(function): function for function in services.activities()}
    combined = []
    for name in sorted(of_jobs.keys() | of_services.keys()):
        if name in of_jobs and name in of_services:
            combined.append(_routed(name, of_jobs[name], of_services[name]))
        else:
            combined.append(of_jobs.get(name) or of_services[name])
    return combined


async def create_endpoint(client: Client, name: str, task_queue: str) -> None:
    """What `temporal operator nexus endpoint create --name NAME --target-namespace NS --target-task-queue Q`
    does."""
    target = EndpointTarget(worker=EndpointTarget.Worker(namespace=client.namespace, task_queue=task_queue))
    await client.operator_service.create_nexus_endpoint(
        CreateNexusEndpointRequest(spec=EndpointSpec(name=name, target=target))
    )


@dataclass(frozen=True)
class NexusStack:
    client: Client
    task_queue: str  # raypilot's
    endpoint: str


@asynccontextmanager
async def raypilot_with_nexus(
    client: Client, jobs: FakeWorld, services: FakeRayWorld
) -> AsyncIterator[NexusStack]:
    """raypilot's worker (workflows, Nexus handlers, fake activities), its endpoint, and the pipeline's
    worker; yields what a test calls them with."""
    queue = f"raypilot-{uuid.uuid4().hex[:8]}"
    endpoint = f"raypilot-{uuid.uuid4().hex[:8]}"
    await create_endpoint(client, endpoint, queue)
    async with (
        Worker(
            client,
            task_queue=queue,
            workflows=list(WORKFLOWS),
            workflow_runner=SandboxedWorkflowRunner(),
            activities=both_worlds(jobs, services),
            nexus_service_handlers=[RayPilotNexusHandler(queue)],
        ),
        Worker(client, task_queue=PIPELINE_QUEUE, workflows=[RayPipeline]),
    ):
        yield NexusStack(client, queue, endpoint)
