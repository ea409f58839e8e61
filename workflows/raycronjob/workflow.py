"""RayCronJobTick: one tick of a RayCronJob's Temporal Schedule becomes one RayJobWorkflow with the contract's
id, and the RayCronJob's finished RayJobs beyond its history limits are deleted.

The schedule (id `raycronjob/<namespace>/<name>`) starts this workflow with the RayCronJob manifest; Temporal
names it `raycronjob/<namespace>/<name>-<nominal time>`. The tick:

1. decides its RayJob from the nominal time in its id (`<cronjob>-<Unix minutes>`, KubeRay's name);
2. starts it as a child `RayJobWorkflow` with id `rayjob/<namespace>/<rayjob>` and the id reuse policy
   RejectDuplicate: a tick fired again (a retried start, a backfill over ticks that ran) finds the id used
   and starts nothing, so a RayJob never runs twice. The child outlives the tick (parent close: abandon);
3. waits for the RayJob to finish, so that Temporal's overlap policy (the RayCronJob's concurrencyPolicy)
   sees a running tick for as long as its RayJob runs. Cancelled (concurrencyPolicy Replace, Temporal's
   CancelOther), it sends its RayJob the `delete` update, waits for it to finish and ends cancelled;
4. observes the RayCronJob's RayJobs, decides which finished ones go (history limits) and deletes them.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any, Final

from temporalio import workflow
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from models.manifest import ManifestError, parse_raycronjob
    from models.naming import KIND_RAYJOB
    from models.raycronjob import RayCronJob, ScheduleSettings, schedule_settings
    from wire import stubs
    from wire.cronjob import CronJobKey, CronJobRun, RayJobRunRef
    from workflows.decisions.raycronjob.runs import (
        child_rayjob_manifest,
        rfc3339_utc,
        runs_to_prune,
        scheduled_time_from_tick_id,
    )
    from workflows.search_attributes import RAY_CRONJOB, RAY_KIND, RAY_NAME, RAY_NAMESPACE

from workflows.kit.calls import IO, call

VALIDATION_FAILED: Final = "ValidationFailed"
RAYJOB_WORKFLOW: Final = "RayJobWorkflow"


def _parse(manifest: Any) -> RayCronJob:
    try:
        return parse_raycronjob(manifest)
    except ManifestError as error:
        raise ApplicationError(str(error), type=VALIDATION_FAILED, non_retryable=True) from None


@workflow.defn(name="RayCronJobTick")
class RayCronJobTickWorkflow:
    def __init__(self) -> None:
        self._rayjob = ""

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        return {"rayJob": self._rayjob}

    @workflow.run
    async def run(self, manifest: Any) -> dict[str, Any]:
        cronjob = _parse(manifest)
        try:
            settings = schedule_settings(cronjob.metadata.annotations)
        except ValueError as error:
            raise ApplicationError(str(error), type=VALIDATION_FAILED, non_retryable=True) from None
        info = workflow.info()
        # A tick started by hand (no nominal time in its id) counts as scheduled when it started.
        scheduled = scheduled_time_from_tick_id(info.workflow_id) or workflow.now()
        rayjob = child_rayjob_manifest(manifest, scheduled)
        namespace, name = rayjob["metadata"]["namespace"], rayjob["metadata"]["name"]
        self._rayjob = name
        summary: dict[str, Any] = {"rayJob": name, "scheduledTime": rfc3339_utc(scheduled)}
        ref = RayJobRunRef(namespace, name, f"rayjob/{namespace}/{name}")
        try:
            child = await workflow.start_child_workflow(
                RAYJOB_WORKFLOW,
                rayjob,
                id=ref.workflow_id,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(RAY_KIND, KIND_RAYJOB),
                        SearchAttributePair(RAY_NAMESPACE, namespace),
                        SearchAttributePair(RAY_NAME, name),
                        SearchAttributePair(RAY_CRONJOB, cronjob.metadata.name),
                    ]
                ),
                static_summary=f"RayJob {namespace}/{name} of RayCronJob {cronjob.metadata.name}",
            )
        except WorkflowAlreadyStartedError:
            # This tick fired before (its RayJob exists or existed): KubeRay's AlreadyExists, no duplicate.
            return {**summary, "outcome": "AlreadyStarted"}
        try:
            # Shielded: cancelling the tick must not cancel the RayJob's workflow (it is deleted instead).
            status = await asyncio.shield(child)
        except asyncio.CancelledError:
            await call(stubs.request_rayjob_deletion, ref, IO.RECONCILE)
            await _finished(child)
            raise
        except ChildWorkflowError as error:
            status = {"jobDeploymentStatus": "Failed", "message": str(error.cause or error)}
        final = status if isinstance(status, dict) else {}
        pruned = await self._prune(CronJobKey(namespace, cronjob.metadata.name), settings, ref, final)
        return {
            **summary,
            "outcome": "Finished",
            "jobDeploymentStatus": final.get("jobDeploymentStatus", ""),
            "jobStatus": final.get("jobStatus", ""),
            "pruned": pruned,
        }

    async def _prune(
        self, key: CronJobKey, settings: ScheduleSettings, own: RayJobRunRef, own_status: dict[str, Any]
    ) -> list[str]:
        """History limits: observe the RayCronJob's RayJobs, decide, delete the finished ones beyond them.
        Its own RayJob counts as finished with the status it returned (Temporal's list may still show it
        running for a moment). Returns the names of the RayJobs deleted."""
        listed = await call(stubs.list_cronjob_runs, key, IO.RECONCILE)
        runs = [
            replace(run, state="COMPLETED", status=own_status) if run.workflow_id == own.workflow_id else run
            for run in listed.runs
        ]
        if own.workflow_id not in {run.workflow_id for run in runs}:
            runs.append(CronJobRun(own.workflow_id, "", own.name, "COMPLETED", own_status))
        pruned = runs_to_prune(runs, settings)
        for run in pruned:
            gone = RayJobRunRef(key.namespace, run.name, run.workflow_id)
            await call(stubs.delete_finished_rayjob, gone, IO.RECONCILE)
        return [run.name for run in pruned]


async def _finished(child: workflow.ChildWorkflowHandle[Any, Any]) -> None:
    """Until the child's workflow closed, whatever its end."""
    with contextlib.suppress(ChildWorkflowError):
        await child
