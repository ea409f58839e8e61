"""`raypilot delete KIND/NAMESPACE/NAME` and `raypilot upgrade pause|resume|promote|abort rayservice/NS/NAME`:
the workflows' updates.

A RayJob whose workflow has already completed (or a RayService whose workflow is gone) can still have
objects left, e.g. the submitter Job that DeleteCluster keeps for its logs: `delete` then removes them by the
ownership labels of docs/contract.md §5, through the Kubernetes API of KUBECONFIG. A RayJob's completed run
that still holds its finished object (workflows.decisions.rayjob.object) is removed from Temporal too, as
`kubectl delete` removes a finished RayJob, so that the next `apply` runs it anew."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)

from activities.kubernetes.client import KubeObjects, load_kube_configuration
from activities.kubernetes.events import delete_objects, labelled_objects
from models.naming import KIND_RAYJOB, KIND_RAYSERVICE, ObjectRef, ownership_labels
from raypilot.cli.common import Console, client_for, parse_ref, ref_id, settings_from
from raypilot.runs.cleanup import DELETE_PATIENCE_SECONDS, delete_finished_runs
from raypilot.runs.errors import CommandError, rejected
from raypilot.runs.lookup import (
    application_cause,
    describe_ref,
    latest_outcome,
    latest_run,
    with_worker_patience,
    workflow_state,
)
from wire.kubernetes import OWNED_KINDS
from workflows.decisions.rayjob.object import RunState, holds_object
from workflows.decisions.rayservice.deletion import orphan_request


def leftover_selector(ref: ObjectRef) -> str:
    """All three ownership labels: objects raypilot created for this RayJob/RayService, never KubeRay's."""
    return ",".join(f"{key}={value}" for key, value in ownership_labels(ref.kind, ref.name).items())


def delete_leftovers(kube: KubeObjects, ref: ObjectRef) -> list[dict[str, str]]:
    """Requests deletion of every object of OWNED_KINDS carrying the ownership labels, in OWNED_KINDS order
    (traffic first); returns those it asked to delete. An API that is not installed (no Gateway API) has
    none."""
    found = labelled_objects(kube, ref.namespace, leftover_selector(ref), OWNED_KINDS)
    return delete_objects(kube, found)


def kube_objects(env: Mapping[str, str]) -> KubeObjects:
    try:
        configuration = load_kube_configuration(env)
    except (ConfigException, OSError) as error:
        raise CommandError(f"Kubernetes configuration: {error}") from None
    return KubeObjects(k8s.ApiClient(configuration))


async def delete_leftovers_for(ref: ObjectRef, console: Console) -> list[dict[str, str]]:
    kube = kube_objects(console.env)
    try:
        return await asyncio.to_thread(delete_leftovers, kube, ref)
    except ApiException as error:
        raise CommandError(f"Kubernetes API: {error.status} {error.reason}") from None
    finally:
        kube.api_client.close()


def describe_objects(refs: list[dict[str, str]]) -> str:
    return ", ".join(f"{ref['kind']}/{ref['name']}" for ref in refs)


async def delete_object(ref_text: str, console: Console, *, wait: bool, cascade: str = "background") -> int:
    ref = parse_ref(ref_text)
    if cascade == "orphan" and ref.kind != KIND_RAYSERVICE:
        raise rejected(
            "--cascade=orphan lets go of a RayService's clusters; a RayJob is deleted or left to finish "
            "(docs/gitops.md, Moving back to KubeRay)"
        )
    settings = settings_from(console)
    client = await client_for(console)
    handle = client.get_workflow_handle(ref_id(ref))
    latest = await latest_run(handle)
    state = latest.status if latest is not None else None
    target = ref_id(ref)
    if cascade == "orphan":
        return await _let_go(handle, target, state, settings.task_queue, console)
    if state != WorkflowExecutionStatus.RUNNING:
        deleted = await delete_leftovers_for(ref, console)
        if (
            ref.kind == KIND_RAYJOB
            and latest is not None
            and state == WorkflowExecutionStatus.COMPLETED
            and holds_object(RunState.COMPLETED, await latest_outcome(latest))
        ):
            await delete_finished_runs(client, handle, latest.run_id, wait=wait)
            left = f"; deleted what was left: {describe_objects(deleted)}" if deleted else ""
            console.out(f"{target} deleted (its finished run {latest.run_id} removed from Temporal{left})")
            return 0
        if state is None and not deleted:
            raise CommandError(f"no {describe_ref(ref)}")
        if deleted:
            console.out(f"{target}: workflow not running; deleted what was left: {describe_objects(deleted)}")
        else:
            console.out(f"{target}: workflow already completed; nothing left to delete")
        return 0
    await accepted_update(
        handle.execute_update("delete", result_type=dict), f"delete {describe_ref(ref)}", settings.task_queue
    )
    if not wait:
        console.out(f"{target} deleting")
        return 0
    try:
        await asyncio.wait_for(handle.result(), DELETE_PATIENCE_SECONDS)
    except TimeoutError:
        raise CommandError(
            f"{target}: deletion asked for, but the workflow did not finish "
            f"within {DELETE_PATIENCE_SECONDS:.0f} s"
        ) from None
    except WorkflowFailureError:
        pass  # deleted anyway: the workflow's failure is not the deletion's
    console.out(f"{target} deleted")
    return 0


async def _let_go(
    handle: WorkflowHandle[Any, Any],
    target: str,
    state: WorkflowExecutionStatus | None,
    task_queue: str,
    console: Console,
) -> int:
    """The `delete` update with the Orphan policy: the workflow completes, what it made stays."""
    if state != WorkflowExecutionStatus.RUNNING:
        raise CommandError(f"{target}: no running workflow to let go of its objects")
    await accepted_update(
        handle.execute_update("delete", orphan_request(), result_type=dict), f"let go of {target}", task_queue
    )
    console.out(f"{target} let go: its RayClusters and Services stay, no longer managed by raypilot")
    return 0


@dataclass(frozen=True)
class RunningRayService:
    """The running workflow of a RayService that a command queries or updates."""

    ref: ObjectRef
    handle: WorkflowHandle[Any, Any]
    task_queue: str


async def running_rayservice(command: str, ref_text: str, console: Console) -> RunningRayService:
    """The running workflow of the RayService `ref_text` names, for `command` (e.g. "upgrade pause"): another
    kind is rejected (exit 2) before Temporal is asked; a RayService without a running workflow fails."""
    ref = parse_ref(ref_text)
    if ref.kind != "RayService":
        raise rejected(f"{command} applies to a rayservice, not to a {ref.kind.lower()}")
    settings = settings_from(console)
    client = await client_for(console)
    handle = client.get_workflow_handle(ref_id(ref))
    if await workflow_state(handle) != WorkflowExecutionStatus.RUNNING:
        raise CommandError(f"no {describe_ref(ref)}")
    return RunningRayService(ref, handle, settings.task_queue)


async def accepted_update(update: Awaitable[dict[str, Any]], what: str, task_queue: str) -> dict[str, Any]:
    """The result of a workflow update; the workflow's rejection is the command's (exit 2, its message)."""
    try:
        return await with_worker_patience(update, what, task_queue)
    except WorkflowUpdateFailedError as error:
        cause = application_cause(error)
        raise rejected(cause.message if cause is not None else str(error)) from None


async def upgrade_control(control: str, ref_text: str, console: Console) -> int:
    rayservice = await running_rayservice(f"upgrade {control}", ref_text, console)
    result = await accepted_update(
        rayservice.handle.execute_update(control, result_type=dict),
        f"{control} {describe_ref(rayservice.ref)}",
        rayservice.task_queue,
    )
    console.out(f"{ref_id(rayservice.ref)}: {result.get('message') or control}")
    return 0
