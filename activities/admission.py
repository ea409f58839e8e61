"""Queueing on a shared cluster, the Temporal side: a RayJob run asks the cluster's admission workflow for a
slot (started by the first RayJob that asks), and the admission workflow asks which holders'
runs have closed (a RayJob that was terminated or crashed never gives its slot back itself)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Final

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from wire import names
from wire.admission import (
    ADMISSION_WORKFLOW,
    ENQUEUE_UPDATE,
    AdmissionAnswer,
    AdmissionRequest,
    AdmissionTicket,
    OpenRuns,
    admission_workflow_id,
)

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

TEMPORAL_UNAVAILABLE: Final = "TemporalUnavailable"


class AdmissionActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @activity.defn(name=names.ENQUEUE_FOR_ADMISSION)
    async def enqueue_for_admission(self, request: AdmissionRequest) -> AdmissionAnswer:
        """The `enqueue` update of the cluster's admission workflow, started when it is not running.
        Idempotent: asking again answers the run's current place."""
        # Start, then update (not update-with-start: Temporal's time-skipping test server lacks it). When the
        # admission workflow completed in between (idle), the update fails and the activity's retry starts it.
        client = self.dependencies.require_temporal_client()
        workflow_id = admission_workflow_id(request.namespace, request.cluster)
        try:
            with contextlib.suppress(WorkflowAlreadyStartedError):
                await client.start_workflow(
                    ADMISSION_WORKFLOW, None, id=workflow_id, task_queue=activity.info().task_queue
                )
            answer: AdmissionAnswer = await client.get_workflow_handle(workflow_id).execute_update(
                ENQUEUE_UPDATE, request, result_type=AdmissionAnswer
            )
        except RPCError as error:
            raise ApplicationError(f"Temporal: {error.message}", type=TEMPORAL_UNAVAILABLE) from None
        return answer

    @activity.defn(name=names.CLOSED_RUNS)
    async def closed_runs(self, request: OpenRuns) -> list[AdmissionTicket]:
        """The tickets whose RayJob run is no longer running (closed, or unknown to Temporal)."""
        client = self.dependencies.require_temporal_client()
        closed: list[AdmissionTicket] = []
        for ticket in request.tickets:
            handle = client.get_workflow_handle(ticket.workflow_id, run_id=ticket.run_id)
            try:
                description = await handle.describe()
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    closed.append(ticket)
                    continue
                raise ApplicationError(f"Temporal: {error.message}", type=TEMPORAL_UNAVAILABLE) from None
            if description.status != WorkflowExecutionStatus.RUNNING:
                closed.append(ticket)
        return closed
