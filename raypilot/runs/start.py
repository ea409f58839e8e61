"""Starting a RayJob's or RayService's workflow, or applying a manifest to its running one, in one call
(update-with-start), as `kubectl apply` creates or updates a custom resource."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionDescription,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from models.naming import KIND_RAYJOB, ObjectRef, workflow_id
from raypilot.runs.errors import CommandError, rejected
from raypilot.runs.lookup import application_cause, describe_ref, latest_outcome, with_worker_patience
from workflows.decisions.rayjob.object import ApplyDecision, ReusePolicy, RunState, apply_decision
from workflows.search_attributes import RAY_KIND, RAY_NAME, RAY_NAMESPACE

WORKFLOW_TYPES = {"RayJob": "RayJobWorkflow", "RayService": "RayServiceWorkflow"}
# A look and a start, again while the latest run changes state under them (it completed meanwhile).
START_ATTEMPTS: Final = 3
CLOSE_PATIENCE_SECONDS: Final = 30.0
# "... due to Workflow Task in failed state" / "... due to unexpected workflow task failure": the update was
# refused while the workflow task is being retried.
WORKFLOW_TASK_RETRYING: Final = "Unable to perform workflow execution update due to"
BUSY_RETRY_SECONDS: Final = 1.0
TRANSIENT_STATUSES: Final = (
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.RESOURCE_EXHAUSTED,
)


def is_transient(error: RPCError) -> bool:
    return error.status in TRANSIENT_STATUSES or WORKFLOW_TASK_RETRYING in error.message


async def decide_apply(ref: ObjectRef, latest: WorkflowExecutionDescription | None) -> ApplyDecision:
    """What applying does now. A RayService's workflow runs until it is deleted, so a closed one never holds
    its object; a RayJob's closed run does unless it was deleted (rayjob_object)."""
    if ref.kind != KIND_RAYJOB:
        return ApplyDecision(unchanged=False, reuse_policy=ReusePolicy.ALLOW_DUPLICATE)
    if latest is None:
        return apply_decision(None, None)
    state = RunState(latest.status.name if latest.status else "RUNNING")
    return apply_decision(state, await latest_outcome(latest))


def start_options(
    ref: ObjectRef, policy: ReusePolicy, task_queue: str, memo: dict[str, Any] | None = None
) -> dict[str, Any]:
    """How every start of a RayJob's or RayService's workflow is made (`apply`, the controller, the Nexus
    operations): the contract id, the task queue, the running run kept (USE_EXISTING), `policy` for a closed
    one, and the search attributes of docs/contract.md §4."""
    return {
        "id": workflow_id(ref.kind, ref.namespace, ref.name),
        "task_queue": task_queue,
        "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
        "id_reuse_policy": WorkflowIDReusePolicy[policy.value],
        "memo": memo,
        "search_attributes": TypedSearchAttributes(
            [
                SearchAttributePair(RAY_KIND, ref.kind),
                SearchAttributePair(RAY_NAMESPACE, ref.namespace),
                SearchAttributePair(RAY_NAME, ref.name),
            ]
        ),
    }


async def update_with_start(
    client: Client,
    ref: ObjectRef,
    manifest: dict[str, Any],
    policy: ReusePolicy,
    task_queue: str,
    memo: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The `apply` update, starting the workflow when no run holds the object; None when the id reuse
    policy refused the start (a run completed meanwhile) or the run answered that it has just finished.
    `memo` goes on a run this starts (the controller records the object's uid there)."""
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        WORKFLOW_TYPES[ref.kind], manifest, **start_options(ref, policy, task_queue, memo)
    )
    update = client.execute_update_with_start_workflow(
        "apply", manifest, start_workflow_operation=start, result_type=dict
    )
    try:
        result: dict[str, Any] = await with_worker_patience(update, f"apply {describe_ref(ref)}", task_queue)
        return result
    except (WorkflowAlreadyStartedError, RPCError) as error:
        await _retrieve_start_error(start)
        if isinstance(error, RPCError) and error.status != RPCStatusCode.ALREADY_EXISTS:
            raise
        return None
    except WorkflowUpdateFailedError as error:
        cause = application_cause(error)
        if cause is not None and cause.type == "RayJobFinished":
            return None
        if cause is not None and cause.type in ("ValidationFailed", "RayJobDeleting"):
            raise rejected(cause.message) from None
        raise CommandError(f"apply {describe_ref(ref)}: {cause.message if cause else error}") from None


async def _retrieve_start_error(start: WithStartWorkflowOperation[Any, Any]) -> None:
    """The start's own copy of the error, retrieved so it is not reported as never retrieved at exit."""
    with contextlib.suppress(Exception):
        await start.workflow_handle()


async def wait_closed(handle: WorkflowHandle[Any, Any]) -> None:
    """Until the latest run has closed (a run that has just finished completes within moments)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(handle.result(), CLOSE_PATIENCE_SECONDS)
