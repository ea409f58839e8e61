"""Each tick's RayJob and which finished RayJobs a RayCronJob keeps (pure).

A tick's RayJob is `<cronjob>-<scheduled time in Unix minutes>` (KubeRay's getRayJobName), labelled
`ray.io/cronjob-name` and annotated `ray.io/cronjob-scheduled-timestamp` (RFC 3339, UTC), with the
jobTemplate as its spec. The scheduled time is the tick's nominal time: Temporal names a scheduled workflow
`<action workflow id>-<nominal time, RFC 3339 in UTC to the second>`, and jitter does not change it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal

from models.raycronjob import ScheduleSettings
from models.rayjob import JobDeploymentStatus, JobStatus
from wire.cronjob import CronJobRun

__all__ = [
    "ANNOTATION_CRONJOB_SCHEDULED_TIMESTAMP",
    "LABEL_CRONJOB_NAME",
    "child_rayjob_manifest",
    "child_rayjob_name",
    "rfc3339_utc",
    "run_outcome",
    "runs_to_prune",
    "scheduled_time_from_tick_id",
    "tick_workflow_id",
]

LABEL_CRONJOB_NAME: Final = "ray.io/cronjob-name"
ANNOTATION_CRONJOB_SCHEDULED_TIMESTAMP: Final = "ray.io/cronjob-scheduled-timestamp"
_NOMINAL_SUFFIX: Final = re.compile(r"-(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)$")

RunOutcome = Literal["running", "succeeded", "failed"]


def tick_workflow_id(namespace: str, name: str) -> str:
    """The id the schedule's action names (Temporal appends the nominal time to it per tick); the same
    text as the schedule id, `raycronjob/<namespace>/<name>`."""
    return f"raycronjob/{namespace}/{name}"


def scheduled_time_from_tick_id(tick_id: str) -> datetime | None:
    """The nominal time Temporal appended to a scheduled workflow's id; None when there is none (a tick
    workflow started by hand)."""
    match = _NOMINAL_SUFFIX.search(tick_id)
    if match is None:
        return None
    return datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def rfc3339_utc(moment: datetime) -> str:
    """Go's time.RFC3339 of a time in UTC, to the second: 2026-11-25T14:00:00Z."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def child_rayjob_name(cronjob_name: str, scheduled: datetime) -> str:
    """KubeRay's getRayJobName: `<cronjob>-<Unix seconds / 60>` (so ticks within one minute share it)."""
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def child_rayjob_manifest(cronjob: Mapping[str, Any], scheduled: datetime) -> dict[str, Any]:
    """The RayJob of one tick, from the RayCronJob manifest as given (the jobTemplate unchanged)."""
    metadata = cronjob.get("metadata") or {}
    name = str(metadata.get("name", ""))
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": child_rayjob_name(name, scheduled),
            "namespace": str(metadata.get("namespace") or "default"),
            "labels": {LABEL_CRONJOB_NAME: name},
            "annotations": {ANNOTATION_CRONJOB_SCHEDULED_TIMESTAMP: rfc3339_utc(scheduled)},
        },
        "spec": dict((cronjob.get("spec") or {}).get("jobTemplate") or {}),
    }


def run_outcome(run: CronJobRun) -> RunOutcome:
    """A RayJob run still running, or finished as batch/v1 counts Jobs: succeeded only when the RayJob is
    Complete with its Ray job SUCCEEDED; any other end (Failed, a failed or terminated workflow) failed."""
    if run.state == "RUNNING":
        return "running"
    status = run.status or {}
    complete = status.get("jobDeploymentStatus") == JobDeploymentStatus.COMPLETE.value
    succeeded = status.get("jobStatus") == JobStatus.SUCCEEDED.value
    return "succeeded" if run.state == "COMPLETED" and complete and succeeded else "failed"


def _scheduled_minute(run: CronJobRun) -> int:
    suffix = run.name.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else -1


def runs_to_prune(runs: Sequence[CronJobRun], settings: ScheduleSettings) -> tuple[CronJobRun, ...]:
    """The finished RayJobs beyond successfulJobsHistoryLimit / failedJobsHistoryLimit, oldest first; the
    newest (by scheduled time) are kept. Running ones are never pruned."""
    pruned: list[CronJobRun] = []
    for outcome, limit in (
        ("succeeded", settings.successful_jobs_history_limit),
        ("failed", settings.failed_jobs_history_limit),
    ):
        finished = sorted((run for run in runs if run_outcome(run) == outcome), key=_scheduled_minute)
        pruned.extend(finished[: max(0, len(finished) - limit)])
    return tuple(sorted(pruned, key=_scheduled_minute))
