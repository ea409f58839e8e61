"""`raypilot apply` of one RayJob or RayService, validated already: start its workflow or `apply` it to the
running one in one call (update-with-start), as `kubectl apply` creates or updates a custom resource. Reading
the input and the other objects of it: apply_input.py."""

from __future__ import annotations

from typing import Any

from temporalio.client import WithStartWorkflowOperation, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy

from models.features import FEATURE_GATES_ENV, FeatureGates, parse_feature_gates
from models.naming import ObjectRef, workflow_id
from raypilot.cli.common import (
    CommandError,
    Console,
    application_cause,
    client_for,
    describe_ref,
    rejected,
    settings_from,
    with_worker_patience,
    workflow_state,
)
from workflows.search_attributes import RAY_KIND, RAY_NAME, RAY_NAMESPACE

WORKFLOW_TYPES = {"RayJob": "RayJobWorkflow", "RayService": "RayServiceWorkflow"}


def feature_gates(console: Console) -> FeatureGates:
    try:
        return parse_feature_gates(console.env.get(FEATURE_GATES_ENV, ""))
    except ValueError as error:
        raise rejected(f"{FEATURE_GATES_ENV}: {error}") from None


async def apply_manifest(ref: ObjectRef, manifest: dict[str, Any], console: Console) -> int:
    settings = settings_from(console)
    client = await client_for(console)
    wid = workflow_id(ref.kind, ref.namespace, ref.name)
    # Only for the message: whether the workflow ran before. The call below is what decides, atomically.
    was_running = await workflow_state(client.get_workflow_handle(wid)) == WorkflowExecutionStatus.RUNNING
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        WORKFLOW_TYPES[ref.kind],
        manifest,
        id=wid,
        task_queue=settings.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(RAY_KIND, ref.kind),
                SearchAttributePair(RAY_NAMESPACE, ref.namespace),
                SearchAttributePair(RAY_NAME, ref.name),
            ]
        ),
    )
    update = client.execute_update_with_start_workflow(
        "apply", manifest, start_workflow_operation=start, result_type=dict
    )
    try:
        result: dict[str, Any] = await with_worker_patience(
            update, f"apply {describe_ref(ref)}", settings.task_queue
        )
    except WorkflowUpdateFailedError as error:
        cause = application_cause(error)
        if cause is not None and cause.type in ("ValidationFailed", "RayJobDeleting"):
            raise rejected(cause.message) from None
        raise CommandError(f"apply {describe_ref(ref)}: {cause.message if cause else error}") from None
    target = f"{ref.kind.lower()}/{ref.namespace}/{ref.name}"
    if was_running:
        console.out(f"{target} applied, generation {result.get('generation')}")
    else:
        console.out(f"{target} started (workflow {wid} on task queue {settings.task_queue})")
    return 0
