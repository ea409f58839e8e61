"""Ray work as steps of your own Temporal workflows: run a RayJob, upgrade a RayService, and wait for the
result (docs/nexus.md). Call these from inside a workflow; they need only `temporalio` (no sandbox extras).

Through Nexus (any namespace: the endpoint routes to raypilot's namespace and task queue):

    status = await run_rayjob(manifest, endpoint="raypilot")            # the RayJob's final status
    outcome = await upgrade_rayservice(manifest, endpoint="raypilot")   # UpgradeOutcome

As a child workflow, for a caller on raypilot's own namespace (its workers on `task_queue`):

    status = await run_rayjob_child(manifest, task_queue="raypilot")

Either way the run is the one `raypilot status rayjob/<namespace>/<name>` shows. A RayService upgrade has no
child variant: applying a manifest is the RayService workflow's `apply` update, which only a client (the
Nexus handler) can send, not a workflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, TypeVar

import nexusrpc
from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

from models.naming import KIND_RAYJOB, workflow_id
from wire.nexus import RayPilotService, UpgradeOutcome, UpgradeResult

__all__ = [
    "RayPilotService",
    "UpgradeOutcome",
    "UpgradeResult",
    "run_rayjob",
    "run_rayjob_child",
    "upgrade_rayservice",
    "validation_failure",
]

VALIDATION_FAILED = "ValidationFailed"

OutputT = TypeVar("OutputT")


async def _through_endpoint(
    operation: nexusrpc.Operation[dict[str, Any], OutputT],
    manifest: Mapping[str, Any],
    endpoint: str,
    schedule_to_close_timeout: timedelta | None,
    summary: str | None,
) -> OutputT:
    """One operation of the raypilot Nexus service on `manifest`, through the endpoint `endpoint`."""
    client = workflow.create_nexus_client(service=RayPilotService, endpoint=endpoint)
    return await client.execute_operation(
        operation, dict(manifest), schedule_to_close_timeout=schedule_to_close_timeout, summary=summary
    )


async def run_rayjob(
    manifest: Mapping[str, Any],
    *,
    endpoint: str,
    schedule_to_close_timeout: timedelta | None = None,
    summary: str | None = None,
) -> dict[str, Any]:
    """Runs the RayJob through the Nexus endpoint `endpoint` and returns its final status (KubeRay's status
    object: `jobDeploymentStatus`, `jobStatus`, ...). A finished RayJob answers its final status at once; a
    running one is waited for, never started twice. A manifest KubeRay rejects raises NexusOperationError,
    not retried, whose causes hold KubeRay's message (`validation_failure`)."""
    return await _through_endpoint(
        RayPilotService.run_rayjob, manifest, endpoint, schedule_to_close_timeout, summary
    )


async def upgrade_rayservice(
    manifest: Mapping[str, Any],
    *,
    endpoint: str,
    schedule_to_close_timeout: timedelta | None = None,
    summary: str | None = None,
) -> UpgradeOutcome:
    """Applies the RayService manifest (starting the RayService when it does not exist, as `raypilot apply`)
    through the Nexus endpoint `endpoint` and returns how the generation it became ended: promoted,
    rolled-back or failed, with the reason. A manifest equal to the serving one answers at once."""
    return await _through_endpoint(
        RayPilotService.upgrade_rayservice, manifest, endpoint, schedule_to_close_timeout, summary
    )


async def run_rayjob_child(manifest: Mapping[str, Any], *, task_queue: str | None = None) -> dict[str, Any]:
    """Runs the RayJob as a child workflow on `task_queue` (default: the caller's) and returns its final
    status. The child has the contract id `rayjob/<namespace>/<name>`; with the ALLOW_DUPLICATE reuse policy,
    a RayJob that finished already answers its final status at once (its new run takes the finished one's
    status, as a second start from the temporal CLI does). While another caller's run of the same RayJob is
    running, the start fails (WorkflowAlreadyStartedError): use `run_rayjob` to share a run."""
    metadata = manifest.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "default")
    result: dict[str, Any] = await workflow.execute_child_workflow(
        "RayJobWorkflow",
        dict(manifest),
        id=workflow_id(KIND_RAYJOB, namespace, str(metadata.get("name") or "")),
        task_queue=task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        result_type=dict,
    )
    return result


def validation_failure(error: BaseException) -> ApplicationError | None:
    """The ApplicationError of type ValidationFailed among the causes of a failed step (a NexusOperationError
    or a ChildWorkflowError): KubeRay's message for the rejected manifest, naming the field; None when the
    step failed otherwise."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ApplicationError) and cause.type == VALIDATION_FAILED:
            return cause
        cause = getattr(cause, "cause", None) or cause.__cause__
    return None
