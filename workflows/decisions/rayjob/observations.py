"""What a RayJob workflow observes, as small frozen values, and how they are read from Kubernetes JSON.

KubeRay functions: `checkK8sJobStatus`, `getJobFinishedCondition` (K8sJobMode submitter Job),
`checkSidecarContainerStatus`, `checkIsRestartCountExceeded`, `getSubmitterContainerFinishedTime` (SidecarMode
submitter container), and the three outcomes of the dashboard's `GetJobInfo` (found / 404 / error).

The activities hand back plain Kubernetes JSON (a batch/v1 Job's `status`, the head Pod) and the dashboard's
answer; these functions turn them into `SubmitterState` and `JobInfoResult` for the Running decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter

from models.base import Time
from models.naming import DEFAULT_SUBMITTER_BACKOFF_LIMIT, SUBMITTER_CONTAINER_NAME
from models.rayjob import JobStatus
from wire.dashboard import JobInfoAnswer

__all__ = [
    "JobInfo",
    "JobInfoResult",
    "JobInfoUnavailable",
    "JobNotFound",
    "SubmitterState",
    "job_info_result",
    "k8s_job_submitter_state",
    "sidecar_submitter_state",
]

_TIME = TypeAdapter(Time)


@dataclass(frozen=True)
class JobInfo:
    """GET /api/jobs/<id> answered: the Ray job's status, message and start/end (ms since the epoch, 0 =
    unset)."""

    status: JobStatus
    message: str = ""
    start_time_ms: int = 0
    end_time_ms: int = 0


@dataclass(frozen=True)
class JobNotFound:
    """GET /api/jobs/<id> answered 404: the Ray job does not exist on the cluster (yet, or any more)."""


@dataclass(frozen=True)
class JobInfoUnavailable:
    """GET /api/jobs/<id> failed otherwise (unreachable, 5xx, bad JSON): a failed job status check."""

    error: str = ""


JobInfoResult = JobInfo | JobNotFound | JobInfoUnavailable


@dataclass(frozen=True)
class SubmitterState:
    """The submitter as KubeRay judges it in Running (K8sJobMode Job or SidecarMode container).

    `failed`: the submitter has failed for good; `failure_message` is KubeRay's SubmissionFailed message
    for it. `head_pod_missing`: SidecarMode only, the head Pod (which carries the submitter) is gone.
    `finished_at`: when the submitter finished (successfully or not), if it has.
    """

    failed: bool = False
    failure_message: str = ""
    head_pod_missing: bool = False
    finished_at: datetime | None = None


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    parsed: datetime = _TIME.validate_python(value)
    # Go's zero time (0001-01-01T00:00:00Z) means "unset".
    return None if parsed == datetime(1, 1, 1, tzinfo=UTC) else parsed


def k8s_job_submitter_state(job_status: Mapping[str, Any] | None) -> SubmitterState:
    """From a batch/v1 Job's `status`: failed iff a `Failed=True` condition exists (its reason and message go
    into the failure message); finished at the lastTransitionTime of the first `Complete|Failed=True`
    condition. `FailureTarget` is not considered, as in KubeRay."""
    conditions: Sequence[Mapping[str, Any]] = (job_status or {}).get("conditions") or []
    true_conditions = [c for c in conditions if c.get("status") == "True"]
    failed = next((c for c in true_conditions if c.get("type") == "Failed"), None)
    finished = next((c for c in true_conditions if c.get("type") in ("Complete", "Failed")), None)
    failure_message = ""
    if failed is not None:
        reason, message = failed.get("reason", ""), failed.get("message", "")
        failure_message = f"Job submission has failed. Reason: {reason}. Message: {message}"
    return SubmitterState(
        failed=failed is not None,
        failure_message=failure_message,
        finished_at=_parse_time(finished.get("lastTransitionTime")) if finished else None,
    )


def _submitter_container_status(head_pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    statuses: Sequence[Mapping[str, Any]] = (head_pod.get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s.get("name") == SUBMITTER_CONTAINER_NAME), None)


def sidecar_submitter_state(
    head_pod: Mapping[str, Any] | None,
    *,
    submitter_restart_enabled: bool,
    submitter_backoff_limit: int | None = None,
) -> SubmitterState:
    """From the head Pod (None when there is none) of a SidecarMode RayJob.

    Gate SidecarSubmitterRestart off: failed iff the submitter container terminated with a non-zero exit code.
    Gate on: the container restarts on failure; failed iff it terminated at least once before, is not now
    terminated with exit code 0, and restarted `submitter_backoff_limit` (default 2) times or more.
    """
    if head_pod is None:
        return SubmitterState(head_pod_missing=True)
    container = _submitter_container_status(head_pod)
    if container is None:
        return SubmitterState()
    terminated: Mapping[str, Any] | None = (container.get("state") or {}).get("terminated")
    last_terminated = (container.get("lastState") or {}).get("terminated")
    exit_code = int(terminated.get("exitCode", 0)) if terminated is not None else None
    failure_message = ""
    failed = False
    if not submitter_restart_enabled:
        if terminated is not None and exit_code != 0:
            failed = True
            failure_message = (
                f"Ray head pod container {SUBMITTER_CONTAINER_NAME} terminated with exit code {exit_code}: "
                f"{terminated.get('reason', '')}"
            )
    elif last_terminated is not None and not (terminated is not None and exit_code == 0):
        limit = (
            DEFAULT_SUBMITTER_BACKOFF_LIMIT if submitter_backoff_limit is None else submitter_backoff_limit
        )
        if int(container.get("restartCount", 0)) >= limit:
            failed = True
            failure_message = (
                f"Ray head pod submitter container {SUBMITTER_CONTAINER_NAME} terminated after exceeding the "
                "maximum restart count"
            )
    finished_at = _parse_time(terminated.get("finishedAt")) if terminated is not None else None
    return SubmitterState(failed=failed, failure_message=failure_message, finished_at=finished_at)


def job_info_result(answer: JobInfoAnswer) -> JobInfoResult:
    """The dashboard's answer to GET /api/jobs/<id> as the Running decision reads it. A status Ray does not
    define counts as a failed status check."""
    if answer.outcome == "not_found":
        return JobNotFound()
    if answer.outcome == "found":
        try:
            status = JobStatus(answer.status)
        except ValueError:
            return JobInfoUnavailable(f"GetJobInfo fail: unknown job status {answer.status!r}")
        if status != JobStatus.NEW:
            return JobInfo(status, answer.message, answer.start_time_ms, answer.end_time_ms)
        return JobInfoUnavailable("GetJobInfo fail: empty job status")
    return JobInfoUnavailable(answer.error)
