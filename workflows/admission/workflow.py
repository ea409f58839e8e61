"""RayClusterAdmissionWorkflow: queueing on a shared cluster (`raypilot.io/max-concurrent-jobs`).

One workflow per RayCluster (id `raycluster-admission/<namespace>/<cluster>`), started by the first RayJob
that asks for a slot (update-with-start of `enqueue`). It holds who runs and who waits (FIFO), answers each
`enqueue` with the asker's place, and on each `release` tells the next in line with one `admission` signal
(0 = admitted) and the waiting RayJobs that moved their new place. Its cost is per change: nothing happens
while nothing changes. While RayJobs wait, one wait activity (temporal.wait_runs_closed) watches the holders'
runs and returns only when one closed, so that a terminated or crashed RayJob, which never releases its slot
itself, does not block the queue: no timer, a heartbeat a minute (IO.QUIET_WATCH). A worker without that
activity falls back to checking the holders every minute. It completes after being idle for a while (the
next `enqueue` starts it again) and continues as new when its history grows long.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from wire import stubs
    from wire.admission import (
        ADMISSION_SIGNAL,
        ADMISSION_WORKFLOW,
        ENQUEUE_UPDATE,
        QUEUE_QUERY,
        RELEASE_SIGNAL,
        AdmissionAnswer,
        AdmissionRequest,
        AdmissionTicket,
        OpenRuns,
    )
    from workflows.decisions.admission import Admission, AdmissionChange, Ticket, enqueue, release

from workflows.kit.builds import next_run_versioning, target_build_changed
from workflows.kit.calls import IO, call, start
from workflows.kit.waits import Waits

# How often the holders' runs are checked once the wait on them failed in this run.
LIVENESS_CHECK_INTERVAL: Final = timedelta(minutes=1)
IDLE_BEFORE_COMPLETING: Final = timedelta(minutes=5)


def _ticket(wire_ticket: AdmissionTicket) -> Ticket:
    return Ticket(wire_ticket.workflow_id, wire_ticket.run_id)


@workflow.defn(name=ADMISSION_WORKFLOW)
class RayClusterAdmissionWorkflow:
    @workflow.init
    def __init__(self, carried: Admission | None) -> None:
        self.admission = carried or Admission(limit=1)
        # Signals owed to RayJob runs: (ticket, position), sent by the main loop in order.
        self.outbox: list[tuple[Ticket, int]] = []
        # Bumped by every change, so the main loop chooses its timer (liveness or idle) anew.
        self.changes = 0
        # The wait on the holders' runs; if it fails, the run checks them every LIVENESS_CHECK_INTERVAL.
        self.waits = Waits()
        self.waits_for_closed_runs = True

    @workflow.run
    async def run(self, carried: Admission | None) -> None:
        while True:
            await self._send_outbox()
            if workflow.info().is_continue_as_new_suggested() or target_build_changed():
                await self.waits.stop()
                await workflow.wait_condition(workflow.all_handlers_finished)
                if not self.outbox:
                    workflow.continue_as_new(
                        self.admission, initial_versioning_behavior=next_run_versioning()
                    )
            if self.admission.queue and self.waits_for_closed_runs:
                await self._wait_for_a_closed_holder()
                continue
            self.waits.keep_only(())
            if self.admission.queue:
                timeout = LIVENESS_CHECK_INTERVAL
            elif self.admission.idle:
                timeout = IDLE_BEFORE_COMPLETING
            else:
                timeout = None
            seen = self.changes
            try:
                await workflow.wait_condition(
                    lambda seen=seen: bool(self.outbox) or self.changes != seen,  # type: ignore[misc]
                    timeout=timeout,
                )
                continue
            except TimeoutError:
                pass
            if self.admission.queue:
                await self._release_closed_holders()
            elif self.admission.idle:
                await self.waits.stop()
                await workflow.wait_condition(workflow.all_handlers_finished)
                if self.admission.idle and not self.outbox:
                    return

    async def _wait_for_a_closed_holder(self) -> None:
        """Until a handler changed the queue or one of the holders' runs closed (then its slot is freed). The
        wait is kept while the holders stay the same; a new set of holders gets a new wait."""
        holders = [AdmissionTicket(t.workflow_id, t.run_id) for t in self.admission.holders]
        key = tuple((ticket.workflow_id, ticket.run_id) for ticket in holders)
        self.waits.keep_only((key,))
        self.waits.start(
            key,
            lambda: start(
                stubs.wait_runs_closed, OpenRuns(holders), IO.QUIET_WATCH, summary="a holder's run closes"
            ),
        )
        seen = self.changes
        raced = await self.waits.race(lambda: bool(self.outbox) or self.changes != seen)
        for finished in raced.finished:
            try:
                closed: list[AdmissionTicket] = finished.value()
            except asyncio.CancelledError:
                continue
            except ActivityError as error:
                # Not retried: no worker runs the wait (NotFoundError) or it failed for good. The check a
                # minute takes over for this run rather than a wait restarted at once, again and again.
                workflow.logger.warning(
                    "waiting on the holders' runs failed (%s): checking them every minute", error.cause
                )
                self.waits_for_closed_runs = False
                continue
            for gone in closed:
                workflow.logger.info("RayJob run %s closed without releasing its slot", gone)
                self._apply(release(self.admission, _ticket(gone)))

    def _apply(self, change: AdmissionChange) -> None:
        self.changes += 1
        self.admission = change.admission
        self.outbox += [(ticket, 0) for ticket in change.admitted]
        self.outbox += list(change.moved.items())

    async def _send_outbox(self) -> None:
        while self.outbox:
            ticket, position = self.outbox.pop(0)
            handle = workflow.get_external_workflow_handle(ticket.workflow_id, run_id=ticket.run_id)
            try:
                await handle.signal(ADMISSION_SIGNAL, position)
            except Exception as error:
                workflow.logger.info("RayJob run %s gone (%s): its place is freed", ticket, error)
                self._apply(release(self.admission, ticket))

    async def _release_closed_holders(self) -> None:
        holders = [AdmissionTicket(t.workflow_id, t.run_id) for t in self.admission.holders]
        try:
            closed = await call(stubs.closed_runs, OpenRuns(holders), IO.STEP)
        except ActivityError as error:
            workflow.logger.warning("could not check the holders' runs: %s", error.cause)
            return
        for gone in closed:
            workflow.logger.info("RayJob run %s closed without releasing its slot", gone)
            self._apply(release(self.admission, _ticket(gone)))

    @workflow.update(name=ENQUEUE_UPDATE)
    def enqueue(self, request: AdmissionRequest) -> AdmissionAnswer:
        ticket = _ticket(request.ticket)
        change = enqueue(self.admission, ticket, request.limit)
        self._apply(change)
        # The asker learns its place from the answer, not from a signal.
        self.outbox = [(owed, place) for owed, place in self.outbox if owed != ticket]
        return AdmissionAnswer(self.admission.position(ticket))

    @workflow.signal(name=RELEASE_SIGNAL)
    def release(self, ticket: AdmissionTicket) -> None:
        self._apply(release(self.admission, _ticket(ticket)))

    @workflow.query(name=QUEUE_QUERY)
    def queue(self) -> dict[str, object]:
        return {
            "limit": self.admission.limit,
            "running": [ticket.workflow_id for ticket in self.admission.holders],
            "waiting": [ticket.workflow_id for ticket in self.admission.queue],
        }
