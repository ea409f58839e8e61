"""The handlers of the Nexus service `raypilot` (wire/nexus.py, docs/contract.md §9), which the worker
registers.

Both operations start or reach the same workflows `raypilot apply` does, through the same client layer
(raypilot/runs): the contract ids, the search attributes, the id reuse policy `apply` decides. So a run
started through Nexus is the run `raypilot status` shows, and the same request twice reaches one run:

- `run_rayjob` backs the operation with the RayJob's workflow itself (`rayjob/<namespace>/<name>`), whose
  result is the final status. A running run gets the caller attached (USE_EXISTING); a finished RayJob
  answers its final status at once, as `apply` answers "unchanged"; anything else starts a run.
- `upgrade_rayservice` applies the manifest (update-with-start of `rayservice/<namespace>/<name>`, as `apply`)
  and backs the operation with the workflow that waits for the outcome of the generation the manifest
  became (`rayservice-upgrade/<namespace>/<name>/<generation>`), shared by every request for it.

A manifest KubeRay rejects fails the operation (not retried) with KubeRay's message, which names the field,
before anything starts. Other failures (Temporal busy, no worker answering the update in time) are retried
by Nexus: every step is idempotent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import nexusrpc
from nexusrpc.handler import OperationHandler, operation_handler, service_handler
from temporalio import nexus
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

from models.features import FEATURE_GATES_ENV, FeatureGates, parse_feature_gates
from models.manifest import ManifestError
from models.naming import KIND_RAYJOB, KIND_RAYSERVICE, ObjectRef, upgrade_outcome_workflow_id, workflow_id
from raypilot.runs.errors import EXIT_REJECTED, CommandError
from raypilot.runs.lookup import latest_run
from raypilot.runs.manifest import checked_ray_manifest
from raypilot.runs.start import WORKFLOW_TYPES, decide_apply, start_options, update_with_start
from wire.nexus import (
    UPGRADE_OUTCOME_WORKFLOW,
    RayPilotService,
    UpgradeOutcome,
    UpgradeWatchRequest,
)

__all__ = ["VALIDATION_FAILED", "RayPilotNexusHandler", "nexus_handler_from_env"]

VALIDATION_FAILED = "ValidationFailed"  # the error type of a rejected manifest, as the workflows use it


def _failed(message: str) -> ApplicationError:
    """The operation fails, not retried, with this message: the caller's NexusOperationError has it as an
    ApplicationError of type ValidationFailed, as a workflow started with a bad manifest fails."""
    return ApplicationError(message, type=VALIDATION_FAILED, non_retryable=True)


def _retry_later(message: str) -> nexusrpc.HandlerError:
    return nexusrpc.HandlerError(message, type=nexusrpc.HandlerErrorType.UNAVAILABLE)


def _checked(manifest: Mapping[str, Any], kind: str, gates: FeatureGates) -> ObjectRef:
    if not isinstance(manifest, Mapping):
        raise _failed(f"the input must be a {kind} manifest (a JSON object), got {type(manifest).__name__}")
    if manifest.get("kind") != kind:
        raise _failed(f"kind: Unsupported value: {manifest.get('kind')!r}: this operation takes a {kind}")
    try:
        return checked_ray_manifest(manifest, gates)
    except ManifestError as error:
        raise _failed(str(error)) from None


class RunRayJob(nexus.TemporalOperationHandler[dict[str, Any], dict[str, Any]]):
    """`run_rayjob`: the RayJob's final status."""

    def __init__(self, task_queue: str, gates: FeatureGates) -> None:
        self.task_queue = task_queue
        self.gates = gates

    async def start_operation(
        self,
        ctx: nexus.TemporalStartOperationContext,
        client: nexus.TemporalNexusClient,
        input: dict[str, Any],
    ) -> nexus.TemporalOperationResult[dict[str, Any]]:
        ref = _checked(input, KIND_RAYJOB, self.gates)
        handle = client.client.get_workflow_handle(workflow_id(ref.kind, ref.namespace, ref.name))
        decision = await decide_apply(ref, await latest_run(handle))
        if decision.unchanged:
            # A finished RayJob stays finished (KubeRay ignores a finished RayJob's spec): its final status.
            status: dict[str, Any] = await handle.result(follow_runs=False)
            return nexus.TemporalOperationResult.sync(status)
        return await client.start_workflow(
            WORKFLOW_TYPES[KIND_RAYJOB],
            dict(input),
            result_type=dict,
            **start_options(ref, decision.reuse_policy, self.task_queue),
        )

    async def cancel_workflow_run(
        self, ctx: nexus.TemporalCancelOperationContext, options: nexus.CancelWorkflowRunOptions
    ) -> None:
        # The RayJob is an object other callers (and `raypilot status`) share: a caller giving up does not
        # delete it. Deleting it is `raypilot delete rayjob/NAMESPACE/NAME`.
        raise nexusrpc.HandlerError(
            f"run_rayjob is not cancelled by its caller; delete the RayJob to stop it: {options.workflow_id}",
            type=nexusrpc.HandlerErrorType.NOT_IMPLEMENTED,
        )


async def _apply_rayservice(client: Client, ref: ObjectRef, manifest: dict[str, Any], task_queue: str) -> int:
    """The generation the manifest is (or became) in the RayService's workflow: `raypilot apply`."""
    decision = await decide_apply(ref, None)
    try:
        applied = await update_with_start(client, ref, manifest, decision.reuse_policy, task_queue)
    except CommandError as error:
        if error.exit_code == EXIT_REJECTED:
            raise _failed(str(error)) from None
        raise _retry_later(str(error)) from None
    if applied is None or not isinstance(applied.get("generation"), int):
        raise _retry_later(f"apply {ref.namespace}/{ref.name}: its workflow was changing state")
    generation: int = applied["generation"]
    return generation


@service_handler(service=RayPilotService)
class RayPilotNexusHandler:
    """The service's handlers, starting workflows on `task_queue` (the worker's, docs/contract.md §2)."""

    def __init__(self, task_queue: str, gates: FeatureGates | None = None) -> None:
        self.task_queue = task_queue
        self.gates = gates if gates is not None else FeatureGates()

    @operation_handler
    def run_rayjob(self) -> OperationHandler[dict[str, Any], dict[str, Any]]:
        return RunRayJob(self.task_queue, self.gates)

    @nexus.workflow_run_operation
    async def upgrade_rayservice(
        self, ctx: nexus.WorkflowRunOperationContext, input: dict[str, Any]
    ) -> nexus.WorkflowHandle[UpgradeOutcome]:
        """The outcome of the generation this manifest became: promoted, rolled-back or failed, and why."""
        ref = _checked(input, KIND_RAYSERVICE, self.gates)
        generation = await _apply_rayservice(nexus.client(), ref, dict(input), self.task_queue)
        return await ctx.start_workflow(
            UPGRADE_OUTCOME_WORKFLOW,
            UpgradeWatchRequest(ref.namespace, ref.name, generation),
            result_type=UpgradeOutcome,
            id=upgrade_outcome_workflow_id(ref.namespace, ref.name, generation),
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )


def nexus_handler_from_env(task_queue: str, env: Mapping[str, str] = os.environ) -> RayPilotNexusHandler:
    """The handlers with the feature gates of RAYPILOT_FEATURE_GATES (ValueError on a bad value)."""
    return RayPilotNexusHandler(task_queue, parse_feature_gates(env.get(FEATURE_GATES_ENV, "")))
