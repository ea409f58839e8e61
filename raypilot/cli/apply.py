"""`raypilot apply` of one RayJob or RayService, validated already: start its workflow or `apply` it to the
running one in one call (update-with-start), as `kubectl apply` creates or updates a custom resource. Reading
the input and the other objects of it: apply_input.py.

Applying is idempotent, as `kubectl apply` is: a RayJob whose workflow completed holds its (finished) object
until it is deleted, so applying it again answers "unchanged" with its final status and starts nothing
(workflows.decisions.rayjob.object). The id reuse policy of the start makes that check atomic: a run that
completes between the look and the start refuses the start, and the command answers "unchanged" then."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
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

from models.features import FEATURE_GATES_ENV, FeatureGates, parse_feature_gates
from models.manifest import parse_rayjob
from models.naming import KIND_RAYJOB, MEMO_SPEC_HASH, ObjectRef, workflow_id
from raypilot.cli.common import (
    WORKER_PATIENCE_SECONDS,
    CommandError,
    Console,
    application_cause,
    client_for,
    describe_ref,
    latest_outcome,
    latest_run,
    rejected,
    settings_from,
    with_worker_patience,
)
from workflows.decisions.rayjob.object import (
    ApplyDecision,
    ReusePolicy,
    RunState,
    apply_decision,
    rayjob_spec_hash,
)
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


def feature_gates(console: Console) -> FeatureGates:
    try:
        return parse_feature_gates(console.env.get(FEATURE_GATES_ENV, ""))
    except ValueError as error:
        raise rejected(f"{FEATURE_GATES_ENV}: {error}") from None


async def apply_manifest(ref: ObjectRef, manifest: dict[str, Any], console: Console) -> int:
    settings = settings_from(console)
    client = await client_for(console)
    handle = client.get_workflow_handle(workflow_id(ref.kind, ref.namespace, ref.name))
    loop = asyncio.get_running_loop()
    busy_until = loop.time() + WORKER_PATIENCE_SECONDS
    attempts = 0
    while attempts < START_ATTEMPTS:
        try:
            latest = await latest_run(handle)
            decision = await decide_apply(ref, latest)
            if decision.unchanged and latest is not None:
                await report_unchanged(handle, latest, manifest, console)
                return 0
            outcome = await update_with_start(
                client, ref, manifest, decision.reuse_policy, settings.task_queue
            )
        except RPCError as error:
            # A server or worker too busy to answer now (the server also refuses updates while the workflow's
            # task is being retried): it is the command that waits, within the worker patience.
            if not is_transient(error) or loop.time() > busy_until:
                raise
            await asyncio.sleep(BUSY_RETRY_SECONDS)
            continue
        attempts += 1
        if outcome is None:
            # The run completed (or was finishing) between the look and the start: look again.
            await wait_closed(handle)
            continue
        target = f"{ref.kind.lower()}/{ref.namespace}/{ref.name}"
        if latest is not None and latest.status == WorkflowExecutionStatus.RUNNING:
            console.out(f"{target} applied, generation {outcome.get('generation')}")
        else:
            console.out(f"{target} started (workflow {handle.id} on task queue {settings.task_queue})")
        return 0
    raise CommandError(f"apply {describe_ref(ref)}: its workflow kept changing state; try again")


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
        WORKFLOW_TYPES[ref.kind],
        manifest,
        id=workflow_id(ref.kind, ref.namespace, ref.name),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy[policy.value],
        memo=memo,
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


async def report_unchanged(
    handle: WorkflowHandle[Any, Any],
    latest: WorkflowExecutionDescription,
    manifest: dict[str, Any],
    console: Console,
) -> None:
    """`kubectl apply` of a finished RayJob: nothing changes. Says its final status, and what a changed
    spec does (nothing)."""
    status: dict[str, Any] = await handle.result(follow_runs=False)
    memo = await latest.memo()
    target = handle.id
    phase = status.get("jobDeploymentStatus") or "finished"
    job_status = status.get("jobStatus") or "-"
    console.out(f"{target} unchanged: {phase} (job status {job_status}), finished in run {latest.run_id}")
    recorded = memo.get(MEMO_SPEC_HASH)
    if isinstance(recorded, str) and recorded and recorded != rayjob_spec_hash(parse_rayjob(manifest)):
        console.out(
            f"{target}: the spec differs from the finished RayJob's; KubeRay ignores spec changes of a "
            "finished RayJob, so nothing runs"
        )
    console.out(f"{target}: `raypilot delete {target}` first to run it again")
