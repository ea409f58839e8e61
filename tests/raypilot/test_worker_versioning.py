"""Worker Versioning (raypilot/versioning.py) on the dev server, with two builds of the worker side by side on
one task queue: a RayJob started on build A stays on A after B becomes current, a new RayJob runs on B, and a
RayService moves from A to B at the continue-as-new its next pass takes. Which build ran each workflow task is
read from the history (the deployment version of every WorkflowTaskCompleted event)."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from typing import Any

from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import rayjob_manifest, start, until_phase
from raypilot.testing.rayjob_world import RUNS_FOREVER, SUCCEEDS, FakeWorld
from raypilot.testing.rayservice_scenarios import rayservice_manifest, status_of
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.worker import running_worker
from raypilot.versioning import deployment_config_from_env
from sandbox.testing import wait_until

STEERED = 30.0  # patience of the fake waits while the test steers the RayJob by hand


async def builds_of(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The build that completed each workflow task of the handle's run, in order."""
    return [
        event.workflow_task_completed_event_attributes.deployment_version.build_id
        async for event in handle.fetch_history_events()
        if event.HasField("workflow_task_completed_event_attributes")
    ]


async def make_current(client: Client, deployment: str, build: str) -> None:
    """Sets the deployment's current build, once its workers have registered it with the server."""

    async def accepted() -> bool:
        try:
            await client.workflow_service.set_worker_deployment_current_version(
                SetWorkerDeploymentCurrentVersionRequest(
                    namespace=client.namespace, deployment_name=deployment, build_id=build, identity="test"
                )
            )
        except RPCError:
            return False  # the version is not known to the server yet
        return True

    await wait_until(accepted, within=30, interval=0.2, what=f"build {build} registered")


async def test_runs_stay_on_their_build_and_a_rayservice_moves_at_continue_as_new(
    dev_server_env: WorkflowEnvironment,
) -> None:
    client = dev_server_env.client
    deployment = f"raypilot-{uuid.uuid4().hex[:8]}"
    # The two fake worlds answer the same activity names, so each has its queue; a build serves both.
    job_queue, service_queue = f"jobs-{uuid.uuid4()}", f"services-{uuid.uuid4()}"
    jobs = FakeWorld(job_scripts=[RUNS_FOREVER, SUCCEEDS], patience=STEERED)
    services = FakeRayWorld()

    async def build(workers: AsyncExitStack, build_id: str) -> None:
        config = deployment_config_from_env(
            {"RAYPILOT_DEPLOYMENT_NAME": deployment, "RAYPILOT_BUILD_ID": build_id}
        )
        for queue, activities in ((job_queue, jobs.activities()), (service_queue, services.activities())):
            await workers.enter_async_context(
                running_worker(client, activities=activities, task_queue=queue, deployment=config)
            )

    async with AsyncExitStack() as workers:
        await build(workers, "a")
        await make_current(client, deployment, "a")
        old_job = await start(client, rayjob_manifest(f"old-{uuid.uuid4().hex[:6]}"), job_queue)
        await until_phase(old_job, "Running")
        name = f"svc-{uuid.uuid4().hex[:6]}"
        service_id = f"rayservice/default/{name}"
        await client.start_workflow(
            "RayServiceWorkflow", args=[rayservice_manifest(name)], id=service_id, task_queue=service_queue
        )
        service = client.get_workflow_handle(service_id, result_type=dict)
        first_run = (await service.describe()).run_id

        await build(workers, "b")
        await make_current(client, deployment, "b")
        new_job = await start(client, rayjob_manifest(f"new-{uuid.uuid4().hex[:6]}"), job_queue)
        await new_job.result()
        await old_job.execute_update("delete")
        await old_job.result()
        # Re-applying the unchanged manifest (as docs/upgrading-raypilot.md says) makes the RayService pass;
        # the pass sees the new current build and continues as new onto it.
        await service.execute_update("apply", rayservice_manifest(name))

        async def moved() -> bool:
            return (await service.describe()).run_id != first_run

        await wait_until(moved, within=60, interval=0.2, what="the RayService's continue-as-new")
        await status_of(service)  # the new run has answered: its first task is done
        service_builds = await builds_of(service)
        await service.execute_update("delete")

    assert set(await builds_of(old_job)) == {"a"}
    assert set(await builds_of(new_job)) == {"b"}
    assert set(await builds_of(client.get_workflow_handle(service_id, run_id=first_run))) == {"a"}
    assert set(service_builds) == {"b"}
