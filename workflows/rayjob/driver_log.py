"""Logs after teardown, the workflow's side: once an attempt failed, or ended at all when the worker keeps a
log store (`driver_log_to_save`, decided as the status changes), the main loop saves its driver log before
the next step can delete anything: one `dashboard.save_driver_log` act, whose small answer becomes the
`DriverLogSaved` condition. The log itself stays out of history (activities/driver_log.py); docs/logs.md.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.meta import with_condition_replaced
    from wire import stubs
    from wire.driver_log import SaveDriverLog
    from workflows.decisions.rayjob.driver_log import driver_log_condition, driver_log_not_saved_condition
    from workflows.decisions.rayjob.events import EventReason, RayJobEvent
    from workflows.search_attributes import MEMO_DRIVER_LOG

from workflows.kit.calls import IO, call
from workflows.rayjob.core import RayJobCore

# Runs recorded before raypilot saved driver logs failed without this act: on replay they must not
# schedule it, so an attempt that saves its log asks this patch (only then: a run that never fails, on a
# worker without a log store, pays nothing).
DRIVER_LOG_PATCH = "rayjob-driver-log"


async def save_driver_log_if_due(core: RayJobCore) -> None:
    """Saves the driver log of the attempt that has just failed, if one has (best effort: a save that
    failed within its budget is said in the condition, and the RayJob goes on)."""
    state = core.state
    submission_id = state.driver_log_due
    if not submission_id:
        return
    state.driver_log_due = ""
    if state.attempt.cluster_spec is None or not workflow.patched(DRIVER_LOG_PATCH):
        return
    announced = RayJobEvent("Normal", EventReason.DRIVER_LOG_SAVED, f"Driver log of Ray job {submission_id}")
    request = SaveDriverLog(
        target=core.dashboard(),
        submission_id=submission_id,
        namespace=core.namespace,
        name=core.name,
        event=core.act_event(announced),
    )
    try:
        saved = await call(stubs.save_driver_log, request, IO.STEP, summary="save the driver log")
    except ActivityError as error:
        cause = error.cause or error.__cause__ or error
        workflow.logger.warning("driver log of Ray job %s not saved: %s", submission_id, cause)
        condition = driver_log_not_saved_condition(submission_id, str(cause), workflow.now())
    else:
        core.acted(RayJobEvent("Normal", EventReason.DRIVER_LOG_SAVED, saved.event_message))
        condition = driver_log_condition(submission_id, saved, workflow.now())
    core.update_status(conditions=with_condition_replaced(core.status.conditions, condition))
    if state.publishes_job_status:
        workflow.upsert_memo({MEMO_DRIVER_LOG: f"{submission_id}/{condition.reason}"})
