"""Saving a failed Ray job's driver log before its RayCluster is deleted (docs/logs.md).

`dashboard.save_driver_log` reads the log from the dashboard (`GET /api/jobs/<id>/logs`, Ray's whole driver
log), puts it into the worker's log store when one is configured (`activities.log_store`), posts the Event
with its last lines on the RayJob, and answers with only the short tail the status shows
(`wire.driver_log.STATUS_TAIL`): the log never enters workflow history.

Safe to retry: the store key and the Event's name are deterministic (a retried attempt writes the same
object and finds its Event). Errors: the dashboard's are classified as every dashboard call's (a 404 is an
answer: no such job, nothing to save); a store that refuses the log for good (a 4xx: no bucket, access
denied) does not fail the save, it is reported in the answer and the Event; one that may recover (5xx, no
answer, a full disk) fails the attempt, and the workflow's retry policy tries again.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Final

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.dashboard import json_object
from activities.dashboard_client import DashboardClient
from activities.dependencies import ActivityDependencies
from activities.kubernetes.event_body import event_body
from activities.log_store import LogStore, LogStoreError, log_store_from_env
from wire import stubs
from wire.driver_log import EVENT_TAIL, STATUS_TAIL, DriverLogSaved, SaveDriverLog, log_store_key, log_tail
from wire.kubernetes import RecordEvent
from wire.stubs.common import implements

__all__ = ["LOG_STORE_UNAVAILABLE", "DriverLogActivities", "driver_log_event_message"]

# Retryable: the configured store did not answer or failed on its side.
LOG_STORE_UNAVAILABLE: Final = "LogStoreUnavailable"


def _size(total_bytes: int) -> str:
    return f"{total_bytes} bytes" if total_bytes < 1024 else f"{total_bytes / 1024:.1f} KiB"


def driver_log_event_message(submission_id: str, saved: DriverLogSaved, logs: str) -> str:
    """The Event's message: what was kept where, then the log's last lines (within `EVENT_TAIL`)."""
    if not saved.found:
        return f"Ray job {submission_id} has no driver log on the dashboard: nothing saved"
    if saved.stored:
        where = f"full log ({_size(saved.total_bytes)}) at {saved.stored}"
    elif saved.store_error:
        error = " ".join(saved.store_error.split())[:200]
        where = f"full log ({_size(saved.total_bytes)}) not kept: {error}"
    else:
        where = f"full log ({_size(saved.total_bytes)}) not kept: no log store"
    tail = log_tail(logs, EVENT_TAIL)
    return f"Driver log of Ray job {submission_id}, {where}; last lines:\n{tail}"


class DriverLogActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies
        # Read once, at worker start: a bad RAYPILOT_LOG_STORE stops the worker with the variable's name.
        self.store: LogStore | None = log_store_from_env(dependencies.env, dependencies.http)

    @implements(stubs.save_driver_log)
    async def save_driver_log(self, request: SaveDriverLog) -> DriverLogSaved:
        client = await DashboardClient.open(self.dependencies, request.target)
        what = f"GetJobLogs fail ({request.submission_id})"
        response = await client.call(
            "GET", f"/api/jobs/{request.submission_id}/logs", what, none_if_missing=True
        )
        if response is None:
            saved = DriverLogSaved(found=False)
            logs = ""
        else:
            logs = str(json_object(response).get("logs") or "")
            saved = await self._keep(request, logs)
        message = driver_log_event_message(request.submission_id, saved, logs)
        await self._post_event(replace(request.event, message=message))
        activity.logger.info(
            "driver log of Ray job %s: %d bytes, stored %s",
            request.submission_id,
            saved.total_bytes,
            saved.stored or "nowhere",
        )
        return replace(saved, event_message=message)

    async def _keep(self, request: SaveDriverLog, logs: str) -> DriverLogSaved:
        data = logs.encode()
        stored = store_error = ""
        if self.store is not None:
            key = log_store_key(request.namespace, request.name, request.submission_id)
            try:
                stored = await self.store.put(key, data)
            except LogStoreError as error:
                if not error.permanent:
                    raise ApplicationError(str(error), type=LOG_STORE_UNAVAILABLE) from None
                store_error = str(error)
        return DriverLogSaved(
            found=True,
            total_bytes=len(data),
            tail=log_tail(logs, STATUS_TAIL),
            stored=stored,
            store_error=store_error,
        )

    async def _post_event(self, event: RecordEvent) -> None:
        """Creates the Event (its name is deterministic: a retried attempt finds it, 409). Best effort, as
        every Event raypilot posts: a failure is logged, the log is saved all the same."""
        body = event_body(event, datetime.now(UTC))
        path = f"/api/v1/namespaces/{event.involved.namespace}/events"
        try:
            response = await self.dependencies.apiserver().request(
                "POST", path, headers={"Content-Type": "application/json"}, content=json.dumps(body).encode()
            )
        except Exception as error:  # no answer, no kubeconfig: the log is saved, the Event the lesser harm
            activity.logger.warning("could not record event %s: %s", event.reason, error)
            return
        if not response.is_success and response.status_code != 409:
            activity.logger.warning("could not record event %s: HTTP %d", event.reason, response.status_code)
