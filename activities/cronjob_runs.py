"""Temporal's own API for RayCronJobs: the RayJobs one RayCronJob made, deleting a finished one (its objects
left in Kubernetes and its runs in Temporal, as deleting a finished RayJob custom resource does), and asking a
running one to delete itself (its `delete` update). Each is one act, safe to repeat."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from temporalio import activity
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateStage
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from models.naming import KIND_RAYJOB, MEMO_OUTCOME, ownership_labels
from wire import stubs
from wire.cronjob import CronJobKey, CronJobRun, CronJobRuns, RayJobRunRef
from wire.kubernetes import OWNED_KINDS
from wire.stubs.common import implements

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

TEMPORAL_UNAVAILABLE: Final = "TemporalUnavailable"
# A RayCronJob with more RayJobs than this in retention is pruned over several ticks.
RUNS_LISTED: Final = 1000

LeftoverDeleter = Callable[["ActivityDependencies", RayJobRunRef], None]


def cronjob_runs_query(key: CronJobKey) -> str:
    return (
        f"WorkflowType = 'RayJobWorkflow' AND RayNamespace = '{key.namespace}' AND RayCronJob = '{key.name}'"
    )


def delete_kubernetes_leftovers(dependencies: ActivityDependencies, ref: RayJobRunRef) -> None:
    """What a finished RayJob left (e.g. a cluster kept without shutdownAfterJobFinishes, the submitter
    Job), found by the ownership labels: owner references would delete them with the RayJob in KubeRay."""
    from activities.kubernetes.events import delete_objects, labelled_objects

    kube = dependencies.kube()
    selector = ",".join(f"{key}={value}" for key, value in ownership_labels(KIND_RAYJOB, ref.name).items())
    delete_objects(kube, labelled_objects(kube, ref.namespace, selector, OWNED_KINDS))


class CronJobRunActivities:
    def __init__(
        self, dependencies: ActivityDependencies, leftovers: LeftoverDeleter = delete_kubernetes_leftovers
    ) -> None:
        self.dependencies = dependencies
        self.leftovers = leftovers

    @implements(stubs.list_cronjob_runs)
    async def list_cronjob_runs(self, request: CronJobKey) -> CronJobRuns:
        """The latest run of each RayJob of the RayCronJob that still holds its RayJob (a run whose memo says
        `deleted` holds nothing), with the final status of the completed ones."""
        client = self.dependencies.require_temporal_client()
        latest: dict[str, Any] = {}
        try:
            async for execution in client.list_workflows(cronjob_runs_query(request), limit=RUNS_LISTED):
                known = latest.get(execution.id)
                if known is None or execution.start_time > known.start_time:
                    latest[execution.id] = execution
            runs: list[CronJobRun] = []
            for workflow_id, execution in sorted(latest.items()):
                state = execution.status or WorkflowExecutionStatus.RUNNING
                if (await execution.memo()).get(MEMO_OUTCOME) == "deleted":
                    continue
                status: dict[str, Any] | None = None
                if state == WorkflowExecutionStatus.COMPLETED:
                    handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
                    result = await handle.result(follow_runs=False)
                    status = result if isinstance(result, dict) else None
                name = workflow_id.rsplit("/", 1)[-1]
                runs.append(CronJobRun(workflow_id, execution.run_id, name, state.name, status))
        except RPCError as error:
            raise ApplicationError(f"Temporal: {error.message}", type=TEMPORAL_UNAVAILABLE) from None
        return CronJobRuns(tuple(runs))

    @implements(stubs.delete_finished_rayjob)
    async def delete_finished_rayjob(self, request: RayJobRunRef) -> bool:
        """Deletes what a finished RayJob left in Kubernetes, then its closed runs from Temporal (the
        RayJob custom resource going away); False when it runs (never deleted here)."""
        client = self.dependencies.require_temporal_client()
        try:
            executions = [
                execution
                async for execution in client.list_workflows(f"WorkflowId = '{request.workflow_id}'")
            ]
            if any(execution.status == WorkflowExecutionStatus.RUNNING for execution in executions):
                return False
            await asyncio.to_thread(self.leftovers, self.dependencies, request)
            for execution in executions:
                with contextlib.suppress(RPCError):  # gone already
                    await client.workflow_service.delete_workflow_execution(
                        DeleteWorkflowExecutionRequest(
                            namespace=client.namespace,
                            workflow_execution=WorkflowExecution(
                                workflow_id=execution.id, run_id=execution.run_id
                            ),
                        )
                    )
        except RPCError as error:
            raise ApplicationError(f"Temporal: {error.message}", type=TEMPORAL_UNAVAILABLE) from None
        return True

    @implements(stubs.request_rayjob_deletion)
    async def request_rayjob_deletion(self, request: RayJobRunRef) -> bool:
        """Sends the `delete` update to a running RayJob and returns once it was accepted (the RayJob's
        workflow completes when its deletion is done); False when it does not run."""
        handle = self.dependencies.require_temporal_client().get_workflow_handle(request.workflow_id)
        try:
            await handle.start_update("delete", wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        except RPCError as error:
            if error.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                return False
            raise ApplicationError(f"Temporal: {error.message}", type=TEMPORAL_UNAVAILABLE) from None
        except Exception as error:
            activity.logger.info("delete of %s not accepted: %s", request.workflow_id, error)
            return False
        return True
