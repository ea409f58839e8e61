"""Rendering a RayJob / RayService status for people: pure functions from status dicts (as the `status` query
returns them, camelCase) to text, shared by `raypilot status`, `--watch` and the demo's live view.

Nothing here does I/O or reads the clock: the caller passes `now` and the phase timeline it observed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from models.naming import canonical_kind
from models.rayservice import RayServiceStatuses
from workflows.decisions.rayservice.conditions import ray_phase

__all__ = [
    "PhaseMark",
    "advance_timeline",
    "bar",
    "format_duration",
    "parse_time",
    "render_status",
    "render_timeline",
    "status_phase",
]

BAR_WIDTH = 20


@dataclass(frozen=True)
class PhaseMark:
    """A phase the watcher saw and when it first saw it."""

    phase: str
    began: datetime


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time as Kubernetes writes it ("2026-01-02T03:04:05Z"); None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def format_duration(seconds: float) -> str:
    """42 s, 3m05s, 1h02m: short and stable in width for a live view."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """[#####.....] for a fraction clamped to 0..1."""
    clamped = min(1.0, max(0.0, fraction))
    filled = round(clamped * width)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def _strip_replicas(status: Mapping[str, Any]) -> dict[str, Any]:
    """The RayService status without what the query adds beyond KubeRay: the per-deployment `replicas` and
    the `revisions` (issue #18)."""
    body = copy.deepcopy(dict(status))
    body.pop("revisions", None)
    for side in ("activeServiceStatus", "pendingServiceStatus"):
        for app in ((body.get(side) or {}).get("applicationStatuses") or {}).values():
            for deployment in (app.get("serveDeploymentStatuses") or {}).values():
                deployment.pop("replicas", None)
    return body


def status_phase(kind: str, status: Mapping[str, Any]) -> str:
    """The one-word phase (the RayPhase search attribute): jobDeploymentStatus for a RayJob ("New" before it
    has one), the workflow's own phase rule for a RayService."""
    if canonical_kind(kind) == "RayJob":
        return str(status.get("jobDeploymentStatus") or "New")
    try:
        statuses = RayServiceStatuses.model_validate(_strip_replicas(status))
    except ValidationError:
        return "Unknown"
    return ray_phase(statuses)


def advance_timeline(timeline: Sequence[PhaseMark], phase: str, now: datetime) -> tuple[PhaseMark, ...]:
    """The timeline with `phase` appended when it differs from the last phase seen."""
    if timeline and timeline[-1].phase == phase:
        return tuple(timeline)
    return (*timeline, PhaseMark(phase, now))


def render_timeline(timeline: Sequence[PhaseMark], now: datetime, *, closed: bool = False) -> list[str]:
    """One line per phase: when it began and how long it lasted (the last one: so far, unless closed)."""
    lines = ["timeline:"]
    for index, mark in enumerate(timeline):
        last = index == len(timeline) - 1
        if last and closed:
            lines.append(f"  {mark.began:%H:%M:%S}  {mark.phase}")
            continue
        end = now if last else timeline[index + 1].began
        suffix = " (now)" if last else ""
        duration = format_duration((end - mark.began).total_seconds())
        lines.append(f"  {mark.began:%H:%M:%S}  {mark.phase:<18} {duration}{suffix}")
    return lines


def _conditions(conditions: object, indent: str = "  ") -> list[str]:
    if not isinstance(conditions, list) or not conditions:
        return []
    lines = [f"{indent}conditions:"]
    for condition in conditions:
        if not isinstance(condition, Mapping):
            continue
        reason = condition.get("reason") or ""
        message = condition.get("message") or ""
        detail = f" {reason}" + (f": {message}" if message else "") if reason or message else ""
        lines.append(f"{indent}  {condition.get('type', '?'):<22} {condition.get('status', '?'):<7}{detail}")
    return lines


def _cluster_summary(cluster_status: object) -> str:
    if not isinstance(cluster_status, Mapping):
        return ""
    state = cluster_status.get("state") or "not ready"
    desired = cluster_status.get("desiredWorkerReplicas")
    ready = cluster_status.get("readyWorkerReplicas") or 0
    return f"{state}, {ready}/{desired} workers ready" if desired else str(state)


def _rayjob_lines(
    status: Mapping[str, Any], now: datetime | None, active_deadline_seconds: int | None
) -> list[str]:
    lines: list[str] = []
    job_status = status.get("jobStatus") or "-"
    lines.append(f"  job status   {job_status}")
    if status.get("jobId"):
        lines.append(f"  job id       {status['jobId']}")
    if status.get("rayClusterName"):
        summary = _cluster_summary(status.get("rayClusterStatus"))
        lines.append(f"  cluster      {status['rayClusterName']}" + (f" ({summary})" if summary else ""))
    if status.get("dashboardURL"):
        lines.append(f"  dashboard    {status['dashboardURL']}")
    started, ended = parse_time(status.get("startTime")), parse_time(status.get("endTime"))
    if started is not None:
        until = ended or now
        run_time = f"run time {format_duration((until - started).total_seconds())}" if until else ""
        line = f"  started      {started:%Y-%m-%d %H:%M:%S}  {run_time}".rstrip()
        if until is not None and active_deadline_seconds:
            elapsed = (until - started).total_seconds()
            line += (
                f"  {bar(elapsed / active_deadline_seconds)} of {format_duration(active_deadline_seconds)}"
            )
            line += " deadline"
        lines.append(line)
    if ended is not None:
        lines.append(f"  ended        {ended:%Y-%m-%d %H:%M:%S}")
    if status.get("succeeded") or status.get("failed"):
        lines.append(
            f"  attempts     {status.get('succeeded', 0)} succeeded, {status.get('failed', 0)} failed"
        )
    if status.get("reason"):
        lines.append(f"  reason       {status['reason']}")
    if status.get("message"):
        lines.append(f"  message      {status['message']}")
    cluster_status = status.get("rayClusterStatus")
    if isinstance(cluster_status, Mapping):
        lines += _conditions(cluster_status.get("conditions"))
    return lines


def _percent_bar(label: str, value: object) -> str:
    if not isinstance(value, int):
        return ""
    return f"{label} {bar(value / 100)} {value:>3}%"


def _side_lines(title: str, side: object) -> list[str]:
    if not isinstance(side, Mapping) or not side.get("rayClusterName"):
        return []
    summary = _cluster_summary(side.get("rayClusterStatus"))
    lines = [f"  {title:<8} {side['rayClusterName']}" + (f" ({summary})" if summary else "")]
    progress = "  ".join(
        part
        for part in (
            _percent_bar("traffic ", side.get("trafficRoutedPercent")),
            _percent_bar("capacity", side.get("targetCapacity")),
        )
        if part
    )
    if progress:
        lines.append(f"           {progress}")
    applications = side.get("applicationStatuses") or {}
    for app_name, app in sorted(applications.items()):
        deployments = app.get("serveDeploymentStatuses") or {}
        healthy = sum(1 for d in deployments.values() if d.get("status") == "HEALTHY")
        lines.append(
            f"           app {app_name}: {app.get('status') or '?'}"
            + (f" ({healthy}/{len(deployments)} deployments HEALTHY)" if deployments else "")
        )
    return lines


def _rayservice_lines(status: Mapping[str, Any]) -> list[str]:
    lines = [
        f"  serve endpoints {status.get('numServeEndpoints', 0)}"
        + (f"   serviceStatus {status['serviceStatus']}" if status.get("serviceStatus") else "")
    ]
    lines += _side_lines("active", status.get("activeServiceStatus"))
    lines += _side_lines("pending", status.get("pendingServiceStatus"))
    lines += _conditions(status.get("conditions"))
    return lines


def render_status(
    kind: str,
    status: Mapping[str, Any],
    *,
    ref: str = "",
    now: datetime | None = None,
    timeline: Sequence[PhaseMark] = (),
    completed: bool = False,
    active_deadline_seconds: int | None = None,
) -> str:
    """The human view of one status: a headline (ref, phase, "completed" when the workflow has closed), the
    kind's details (RayJob: job, cluster, run time; RayService: each side with traffic and capacity bars
    during an incremental upgrade), conditions, and the observed phase timeline when given."""
    phase = status_phase(kind, status)
    headline = f"{ref}  {phase}" if ref else phase
    if completed:
        headline += "  (workflow completed)"
    lines = [headline]
    if canonical_kind(kind) == "RayJob":
        lines += _rayjob_lines(status, now, active_deadline_seconds)
    else:
        lines += _rayservice_lines(status)
    if timeline and now is not None:
        lines += render_timeline(timeline, now, closed=completed)
    return "\n".join(lines) + "\n"
