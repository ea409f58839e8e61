"""A short Ray job that an activity runs on a cluster to read or do what the dashboard's REST API cannot
(replica ranks, closing kept-alive Serve connections): submitted through the dashboard's Jobs API, polled
until terminal (heartbeating), its log read and its record deleted, so the same submission id can run again.

Each activity keeps its own driver, the parsing of its output and the classification of its errors (the
type of the error raised when the job disappears; what a job without an answer means); this is the run they
share.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.dashboard import fetch_job_info, json_object, post_job, shorten_middle
from activities.dashboard_client import DashboardClient
from activities.heartbeat import Heartbeater
from wire.dashboard import JobInfoAnswer

__all__ = [
    "DriverJobKind",
    "DriverJobRun",
    "driver_job_request",
    "remove_job",
    "run_driver_job",
    "until_terminal",
]

MAX_ERROR_CHARS: Final = 600
CLEANUP_SECONDS: Final = 20.0


def driver_job_request(entrypoint: str, submission_id: str, metadata: Mapping[str, str]) -> dict[str, Any]:
    """The body of POST /api/jobs/ for a driver job."""
    return {"entrypoint": entrypoint, "submission_id": submission_id, "metadata": dict(metadata)}


async def until_terminal(client: DashboardClient, submission_id: str, poll_seconds: float) -> JobInfoAnswer:
    """The job's info once it is terminal or gone."""
    while True:
        info = await fetch_job_info(client, submission_id)
        if info.outcome == "not_found" or info.terminal:
            return info
        await asyncio.sleep(poll_seconds)


async def remove_job(client: DashboardClient, submission_id: str, poll_seconds: float) -> None:
    """Best effort, bounded: stop the job, wait until it is terminal (a running job's record cannot be
    deleted), delete its record."""
    with contextlib.suppress(ApplicationError, httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(CLEANUP_SECONDS):
            await client.call("POST", f"/api/jobs/{submission_id}/stop", "StopJob", none_if_missing=True)
            info = await until_terminal(client, submission_id, poll_seconds)
            if info.outcome == "found":
                await client.call("DELETE", f"/api/jobs/{submission_id}", "DeleteJob", none_if_missing=True)


@dataclass(frozen=True)
class DriverJobKind:
    """What sets one activity's driver jobs apart from another's (the driver itself is an argument: it may
    carry the request's values)."""

    activity: str  # names the activity in its errors, e.g. "ReadReplicaRanks"
    label: str  # names the job in the activity's answer, e.g. "replica ranks"
    metadata: Mapping[str, str]  # the job's metadata on the dashboard: whose job it is
    lost_type: str  # the type of the (retryable) ApplicationError when the job's record went away


@dataclass(frozen=True)
class DriverJobRun:
    """A driver job that ended: its terminal info and its log ("" when the dashboard had none)."""

    kind: DriverJobKind
    info: JobInfoAnswer
    logs: str

    def failure(self, client: DashboardClient) -> str:
        """Why the job gave no answer, logged as a warning and redacted: the job's message, else its log's
        tail (the driver's traceback), shortened in the middle."""
        detail = self.info.message or self.logs[-MAX_ERROR_CHARS:]
        error = (
            f"the {self.kind.label} job ended {self.info.status}: {shorten_middle(detail, MAX_ERROR_CHARS)}"
        )
        activity.logger.warning("%s", client.redact(error))
        return client.redact(error)


async def run_driver_job(
    client: DashboardClient, kind: DriverJobKind, entrypoint: str, submission_id: str, poll_seconds: float
) -> DriverJobRun:
    """Submit the driver (a submission id that exists already is this activity's own earlier job), poll it
    until terminal (heartbeating), read its log, delete its record."""
    what = f"{kind.activity} fail ({submission_id})"
    await post_job(client, driver_job_request(entrypoint, submission_id, kind.metadata), what)
    try:
        async with Heartbeater():
            info = await until_terminal(client, submission_id, poll_seconds)
    except asyncio.CancelledError:
        # The workflow no longer wants the answer (e.g. the replica set moved on): leave no job record behind.
        await remove_job(client, submission_id, poll_seconds)
        raise
    if info.outcome == "not_found":
        # Its record went away (a head restart): the next attempt submits it again.
        raise ApplicationError(f"{what}: the job disappeared", type=kind.lost_type)
    logs_response = await client.call("GET", f"/api/jobs/{submission_id}/logs", what, none_if_missing=True)
    logs = str(json_object(logs_response).get("logs") or "") if logs_response is not None else ""
    await client.call("DELETE", f"/api/jobs/{submission_id}", what, none_if_missing=True)
    return DriverJobRun(kind, info, logs)
