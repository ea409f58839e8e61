"""Logs after teardown: when a RayJob saves its Ray job's driver log, and what its status says of it
(docs/logs.md).

Once a RayJob's RayCluster is deleted (a deletion policy, a retry on a new cluster, the RayJob deleted), the
driver log goes with it; KubeRay keeps nothing (its History Server, alpha in 1.7, is a separate deployment).
raypilot saves it when an attempt fails, before anything is deleted: the log's last lines as an Event on the
RayJob and as the `DriverLogSaved` condition of its status, and the full log in the worker's log store when
one is configured (`dashboard.save_driver_log`). With a log store, a succeeded attempt's log is kept too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from models.meta import Condition, ConditionStatus
from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJobStatus
from wire.driver_log import DriverLogSaved

__all__ = [
    "DRIVER_LOG_CONDITION",
    "REASON_NOT_SAVED",
    "REASON_NO_DRIVER_LOG",
    "REASON_STORED",
    "REASON_TAIL_SAVED",
    "driver_log_condition",
    "driver_log_not_saved_condition",
    "driver_log_to_save",
    "saved_tail",
]

DRIVER_LOG_CONDITION: Final = "DriverLogSaved"
REASON_STORED: Final = "Stored"  # the full log is in the log store, its last lines in the message
REASON_TAIL_SAVED: Final = "TailSaved"  # only the last lines (no log store, or it refused the log)
REASON_NO_DRIVER_LOG: Final = "NoDriverLog"  # the dashboard had no log of the job
REASON_NOT_SAVED: Final = "NotSaved"  # the dashboard or the store did not answer in time
# The message's first line says what was kept where; the log's last lines follow it.
TAIL_HEADER_END: Final = "\n"

_FAILED_ATTEMPT: Final = frozenset({JobDeploymentStatus.FAILED, JobDeploymentStatus.RETRYING})
_ENDED_ATTEMPT: Final = _FAILED_ATTEMPT | {JobDeploymentStatus.COMPLETE}


def _one_line(text: str) -> str:
    """An error as one line of at most 300 characters (the message's first line is its header)."""
    return " ".join(text.split())[:300]


def driver_log_to_save(
    previous: RayJobStatus, new: RayJobStatus, keeps_every_log: bool = False
) -> str | None:
    """The submission id whose driver log is saved now, None for none: an attempt that has just failed
    (Failed, or Retrying after a failure), or with `keeps_every_log` (a log store is configured) one that has
    just ended in any way, and whose Ray job the dashboard knows (jobStatus set). A RayJob failed before its
    Ray job was submitted (a submission or pre-running deadline) has no log; nor is one read from a dashboard
    that failed every status check for RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS (the save would only hold the
    failure up while it retried)."""
    ending = _ENDED_ATTEMPT if keeps_every_log else _FAILED_ATTEMPT
    if new.job_deployment_status not in ending or previous.job_deployment_status in ending:
        return None
    if new.reason == JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED:
        return None
    if not new.job_id or not new.ray_cluster_name or new.job_status == JobStatus.NEW:
        return None
    return new.job_id


def driver_log_condition(submission_id: str, saved: DriverLogSaved, now: datetime) -> Condition:
    """The status condition for what `dashboard.save_driver_log` saved."""
    if not saved.found:
        return Condition(
            type=DRIVER_LOG_CONDITION,
            status=ConditionStatus.FALSE,
            last_transition_time=now,
            reason=REASON_NO_DRIVER_LOG,
            message=f"Ray job {submission_id} has no driver log on the dashboard",
        )
    if saved.stored:
        reason, where = REASON_STORED, f"full log ({saved.total_bytes} bytes) at {saved.stored}"
    elif saved.store_error:
        reason, where = REASON_TAIL_SAVED, f"full log not kept: {_one_line(saved.store_error)}"
    else:
        reason, where = REASON_TAIL_SAVED, "full log not kept: no log store configured"
    return Condition(
        type=DRIVER_LOG_CONDITION,
        status=ConditionStatus.TRUE,
        last_transition_time=now,
        reason=reason,
        message=f"Ray job {submission_id}: {where}; last lines:{TAIL_HEADER_END}{saved.tail}",
    )


def driver_log_not_saved_condition(submission_id: str, error: str, now: datetime) -> Condition:
    """The status condition when the save failed for good (the dashboard or the store never answered)."""
    return Condition(
        type=DRIVER_LOG_CONDITION,
        status=ConditionStatus.FALSE,
        last_transition_time=now,
        reason=REASON_NOT_SAVED,
        message=f"the driver log of Ray job {submission_id} was not saved: {_one_line(error)}",
    )


def saved_tail(condition: Condition) -> str | None:
    """The log's last lines a `DriverLogSaved` condition holds, None when it holds none."""
    if condition.status != ConditionStatus.TRUE or TAIL_HEADER_END not in condition.message:
        return None
    return condition.message.split(TAIL_HEADER_END, 1)[1]
