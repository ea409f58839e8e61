"""Queueing on a shared cluster, the Temporal side: a RayJob run asks the cluster's admission workflow for a
slot (started by the first RayJob that asks), and the admission workflow asks which holders'
runs have closed (a RayJob that was terminated or crashed never gives its slot back itself)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Final

from temporalio import activity
from temporalio.client import WorkflowContinuedAsNewError, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from activities.heartbeat import Heartbeater, quiet_heartbeat_interval
from wire import stubs
from wire.admission import (
    ADMISSION_WORKFLOW,
    ENQUEUE_UPDATE,
    AdmissionAnswer,
    AdmissionRequest,
    AdmissionTicket,
    OpenRuns,
    admission_workflow_id,
)
from wire.stubs.common import implements

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

TEMPORAL_UNAVAILABLE: Final = "TemporalUnavailable"


class AdmissionActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @implements(stubs.enqueue_for_admission)
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

    @implements(stubs.closed_runs)
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

    @implements(stubs.wait_runs_closed)
    async def wait_runs_closed(self, request: OpenRuns) -> list[AdmissionTicket]:
        """Until at least one of the tickets' runs is no longer running (closed, or unknown to Temporal):
        those that closed. Each run's close is awaited with Temporal's long poll of its history (no request
        per check, no action), heartbeating once a third of the heartbeat timeout (IO.QUIET_WATCH)."""
        client = self.dependencies.require_temporal_client()

        async def closed(ticket: AdmissionTicket) -> AdmissionTicket:
            handle = client.get_workflow_handle(ticket.workflow_id, run_id=ticket.run_id)
            try:
                await handle.result(follow_runs=False)
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise ApplicationError(f"Temporal: {error.message}", type=TEMPORAL_UNAVAILABLE) from None
            except (WorkflowFailureError, WorkflowContinuedAsNewError):
                pass  # failed, terminated, cancelled, timed out or continued as new: closed all the same
            return ticket

        async with Heartbeater(interval=quiet_heartbeat_interval):
            waiting = [asyncio.ensure_future(closed(ticket)) for ticket in request.tickets]
            try:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in waiting:
                    task.cancel()
            return [task.result() for task in waiting if task in done]
