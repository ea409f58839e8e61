"""What the demo prints: one live line per change of a RayJob or a RayService upgrade, and the summaries.

Pure functions of status dicts (the `status` query's camelCase JSON) and load counts; the caller measures
time.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from raypilot.cli.timeline import SideView, Step, side_view
from raypilot.load import FAILED, share

RECENT_S = 2.0  # the live share of the new version is over this many seconds: the current split, not history

__all__ = [
    "JobReport",
    "UpgradeReport",
    "job_line",
    "job_summary",
    "migration_intervals",
    "service_line",
    "upgrade_summary",
]


def _cluster_state(status: Mapping[str, Any]) -> str:
    cluster = status.get("rayClusterStatus")
    state = cluster.get("state") if isinstance(cluster, Mapping) else None
    return str(state) if state else "not ready"


def job_line(elapsed: float, status: Mapping[str, Any]) -> str:
    """`  12.3 s  Running       job RUNNING     id demo-job-x  cluster demo-job-abcde (ready)`"""
    phase = status.get("jobDeploymentStatus") or "New"
    job_status = status.get("jobStatus") or "-"
    job_id = status.get("jobId") or "-"
    cluster = status.get("rayClusterName")
    where = f"{cluster} ({_cluster_state(status)})" if cluster else "-"
    return f"  {elapsed:6.1f} s  {phase:<13} job {job_status:<10} id {job_id}  cluster {where}"


def _side_text(label: str, side: SideView | None, default_percent: int) -> str:
    if side is None:
        return f"{label} -"
    traffic = side.traffic if side.traffic is not None else default_percent
    capacity = side.capacity if side.capacity is not None else default_percent
    return f"{label} {side.cluster} traffic {traffic:3d}% capacity {capacity:3d}%"


def service_line(
    elapsed: float, status: Mapping[str, Any], counts: Counter[str], recent: Counter[str], new_version: str
) -> str:
    """`  12.3 s  active demo-svc-ab traffic  75% capacity 100% | pending ... | ok 812 failed 0 | v2 25.0%`:
    both sides, the answers so far (`counts`) and the new version's share of the `recent` ones."""
    active = _side_text("active", side_view(status.get("activeServiceStatus")), 100)
    pending = _side_text("pending", side_view(status.get("pendingServiceStatus")), 0)
    answered = sum(number for version, number in counts.items() if version != FAILED)
    failed = counts.get(FAILED, 0)
    return (
        f"  {elapsed:6.1f} s  {active} | {pending} | ok {answered} failed {failed}"
        f" | {new_version} share {share(recent, new_version):5.1f}% (last {RECENT_S:.0f} s)"
    )


@dataclass(frozen=True)
class JobReport:
    name: str
    phase: str
    job_status: str
    job_id: str
    cluster: str
    run_s: float | None  # startTime -> endTime of the job
    cluster_deleted_after_end_s: float | None  # endTime -> the RayCluster was seen gone
    ttl_s: int


def job_summary(report: JobReport) -> list[str]:
    lines = [
        f"RayJob {report.name}: {report.phase}, job {report.job_status} (id {report.job_id})"
        f" on {report.cluster}"
    ]
    if report.run_s is not None:
        lines.append(f"  job ran {report.run_s:.1f} s (startTime -> endTime)")
    if report.cluster_deleted_after_end_s is None:
        lines.append(f"  RayCluster {report.cluster} NOT deleted (DeleteCluster rule, ttl {report.ttl_s} s)")
    else:
        lines.append(
            f"  RayCluster deleted {report.cluster_deleted_after_end_s:.1f} s after endTime"
            f" (DeleteCluster rule, ttl {report.ttl_s} s; endTime has whole seconds)"
        )
    return lines


@dataclass(frozen=True)
class UpgradeReport:
    old_cluster: str
    new_cluster: str
    old_version: str
    new_version: str
    counts: Counter[str]  # answers per version (and FAILED) while the load ran
    failure_details: Counter[str]  # why requests failed: status code or error
    steps: Sequence[Step]
    migrated_times: Sequence[datetime]  # distinct lastTrafficMigratedTime values seen, in order
    total_s: float | None  # v2 applied -> v2 active with everything, v1 gone; None when it never got there
    strategy: str
    timeline_png: Path | None


def migration_intervals(times: Sequence[datetime]) -> list[float]:
    """Seconds between successive traffic migrations (lastTrafficMigratedTime values)."""
    return [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(times)]


def upgrade_summary(report: UpgradeReport) -> list[str]:
    sent = sum(report.counts.values())
    failed = report.counts.get(FAILED, 0)
    rate = 100.0 * failed / sent if sent else 0.0
    names = {report.old_cluster: report.old_version, report.new_cluster: report.new_version}
    lines = [
        f"RayService upgrade {report.old_version} -> {report.new_version} ({report.strategy})",
        f"  requests sent {sent}, failed {failed} ({rate:.2f} %);"
        f" {report.new_version} answered {share(report.counts, report.new_version):.1f} % of them",
        "  steps (seconds after the new manifest was applied, as recorded in the workflow's history):",
    ]
    for step in report.steps:
        who = f"{names.get(step.cluster, '?')} {step.cluster}"
        lines.append(f"    {step.at:6.1f} s  {who:<28} {step.what:<8} {step.before:3d}% -> {step.after:3d}%")
    if not report.steps:
        lines.append("    none seen")
    for detail, number in report.failure_details.most_common(3):
        lines.append(f"  failed {number} x: {detail}")
    if report.migrated_times:
        intervals = ", ".join(f"{seconds:.0f}" for seconds in migration_intervals(report.migrated_times))
        first = report.migrated_times[0]
        lines.append(
            f"  traffic migrations (lastTrafficMigratedTime): {len(report.migrated_times)}, first at"
            f" {first:%H:%M:%S}" + (f", then every {intervals} s" if intervals else "")
        )
    if report.total_s is None:
        lines.append("  upgrade did NOT complete")
    else:
        lines.append(
            f"  total upgrade time {report.total_s:.1f} s"
            " (new manifest applied -> new cluster active, pending side empty)"
        )
        if report.steps:
            first_step, last_step = report.steps[0].at, report.steps[-1].at
            lines.append(
                f"    of which {first_step:.1f} s until the new cluster served (its first step),"
                f" {last_step - first_step:.1f} s of traffic and capacity steps"
            )
    if report.timeline_png is not None:
        lines.append(f"  timeline picture: {report.timeline_png}")
    return lines
