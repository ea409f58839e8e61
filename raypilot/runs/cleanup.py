"""Removing a RayJob's finished runs from Temporal, as deleting a finished RayJob removes the object."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from models.naming import MEMO_OUTCOME
from raypilot.runs.errors import CommandError
from raypilot.runs.lookup import latest_run
from workflows.decisions.rayjob.object import RunState, holds_object

# Deleting owned objects and waiting for the clusters to go can take a while on a real cluster.
DELETE_PATIENCE_SECONDS = 300.0
FINISHED_RUN_POLL_SECONDS = 0.5


async def finished_runs(client: Client, workflow_id: str) -> set[str]:
    """The completed runs of a RayJob's id that hold its finished object (visibility)."""
    found = set()
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        if execution.status != WorkflowExecutionStatus.COMPLETED:
            continue
        outcome = (await execution.memo()).get(MEMO_OUTCOME)
        if holds_object(RunState.COMPLETED, outcome if isinstance(outcome, str) else None):
            found.add(execution.run_id)
    return found


async def delete_finished_runs(
    client: Client, handle: WorkflowHandle[Any, Any], latest_run_id: str, *, wait: bool
) -> None:
    """Removes a RayJob's completed runs that hold its finished object from Temporal
    (DeleteWorkflowExecution), as deleting a finished RayJob removes the object: the next `apply` (or a run
    started with the temporal CLI) then runs it anew instead of finding one of them. Temporal removes runs in
    the background (about 30 s on the dev server); with `wait`, until they are gone."""
    runs = await finished_runs(client, handle.id) | {latest_run_id}
    for run_id in runs:
        execution = WorkflowExecution(workflow_id=handle.id, run_id=run_id)
        with contextlib.suppress(RPCError):  # gone already
            await client.workflow_service.delete_workflow_execution(
                DeleteWorkflowExecutionRequest(namespace=client.namespace, workflow_execution=execution)
            )
    if not wait:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DELETE_PATIENCE_SECONDS
    while True:
        latest = await latest_run(handle)
        described_gone = latest is None or latest.run_id not in runs
        if described_gone and not runs & await finished_runs(client, handle.id):
            return
        if loop.time() > deadline:
            raise CommandError(
                f"{handle.id}: deletion asked for, but Temporal still had its runs after "
                f"{DELETE_PATIENCE_SECONDS:.0f} s"
            )
        await asyncio.sleep(FINISHED_RUN_POLL_SECONDS)
