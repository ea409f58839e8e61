"""`raypilot apply` of one RayJob or RayService, validated already: start its workflow or `apply` it to the
running one in one call (update-with-start, raypilot/runs/start.py), as `kubectl apply` creates or updates a
custom resource. Reading the input and the other objects of it: apply_input.py.

Applying is idempotent, as `kubectl apply` is: a RayJob whose workflow completed holds its (finished) object
until it is deleted, so applying it again answers "unchanged" with its final status and starts nothing
(workflows.decisions.rayjob.object). The id reuse policy of the start makes that check atomic: a run that
completes between the look and the start refuses the start, and the command answers "unchanged" then."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from models.features import FEATURE_GATES_ENV, FeatureGates, parse_feature_gates
from models.manifest import parse_rayjob
from models.naming import MEMO_SPEC_HASH, ObjectRef, workflow_id
from raypilot.cli.common import Console, client_for, settings_from
from raypilot.runs.errors import CommandError, rejected
from raypilot.runs.lookup import WORKER_PATIENCE_SECONDS, describe_ref, latest_run
from raypilot.runs.start import (
    BUSY_RETRY_SECONDS,
    START_ATTEMPTS,
    decide_apply,
    is_transient,
    update_with_start,
    wait_closed,
)
from workflows.decisions.rayjob.object import rayjob_spec_hash


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
