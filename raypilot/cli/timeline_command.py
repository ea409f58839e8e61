"""`raypilot timeline KIND/NAMESPACE/NAME [-o FILE.png|FILE.svg]`: the picture of a workflow's life, finished
or running, from its history (`raypilot.cli.timeline_history`) and its status.

A RayService: the traffic (solid) and target capacity (dashed) of every cluster it ran, with its phases and
the updates it took as marks. A RayJob: its jobDeploymentStatus over time. Runs that continued as new are
read back to the first (up to `MAX_RUNS`), so a long-lived RayService shows its whole recorded life.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from models.naming import KIND_RAYJOB
from raypilot.cli.common import Console, client_for, parse_ref, ref_id, settings_from
from raypilot.cli.status import observe
from raypilot.cli.timeline import ClusterPoint, save_figure, write_timeline_png
from raypilot.cli.timeline_history import (
    HistoryTimeline,
    Mark,
    cluster_points,
    steps_of,
    timeline_from_history,
)
from raypilot.runs.errors import CommandError, rejected
from raypilot.runs.lookup import describe_ref

MAX_RUNS = 20
PICTURE_SUFFIXES = (".png", ".svg")
# A RayJob's states from bottom to top, in the order a run usually passes them.
RAYJOB_STATES = (
    "New",
    "Initializing",
    "Waiting",
    "Running",
    "Suspending",
    "Suspended",
    "Retrying",
    "Complete",
    "Failed",
    "ValidationFailed",
)


async def handle_events(handle: WorkflowHandle[Any, Any]) -> list[dict[str, Any]]:
    """The events of one run in their JSON form (as `temporal workflow show --output json` prints them)."""
    history = await handle.fetch_history()
    events: list[dict[str, Any]] = json.loads(history.to_json())["events"]
    return events


async def run_events(client: Client, workflow_id: str) -> list[dict[str, Any]]:
    """The events of the latest run, preceded by those of the runs it continued (oldest first)."""
    runs: list[list[dict[str, Any]]] = []
    run_id: str | None = None
    for _ in range(MAX_RUNS):
        events = await handle_events(client.get_workflow_handle(workflow_id, run_id=run_id))
        runs.insert(0, events)
        started = (events[0].get("workflowExecutionStartedEventAttributes") or {}) if events else {}
        run_id = started.get("continuedExecutionRunId") or None
        if run_id is None:
            break
    return [event for events in runs for event in events]


def output_path(ref_kind: str, namespace: str, name: str, given: str | None) -> Path:
    path = Path(given) if given else Path(f"{ref_kind.lower()}-{namespace}-{name}-timeline.png")
    if path.suffix.lower() not in PICTURE_SUFFIXES:
        raise rejected(f"{path}: the picture is written as .png or .svg")
    return path


def write_rayjob_png(
    path: Path, phases: Sequence[Mark], controls: Sequence[Mark], until: float, title: str
) -> Path:
    """The jobDeploymentStatus as a step line over time, the updates as marks; returns `path`."""
    import matplotlib

    matplotlib.use("Agg")  # no display: this only ever writes a file
    from matplotlib import pyplot

    levels = {state: index for index, state in enumerate(RAYJOB_STATES)}
    points = [Mark(0.0, "New"), *phases]
    times = [mark.at for mark in points] + [until]
    values = [levels.get(mark.label, 0) for mark in points]
    values.append(values[-1])
    figure, axes = pyplot.subplots(figsize=(10, 4))
    axes.step(times, values, where="post", color="tab:blue", linewidth=2, label="jobDeploymentStatus")
    axes.plot(times[:-1], values[:-1], "o", color="tab:blue", markersize=5)
    for mark in phases:
        label, where = f"{mark.label} ({mark.at:.1f} s)", (mark.at, levels.get(mark.label, 0))
        axes.annotate(label, where, fontsize="small", xytext=(4, 4), textcoords="offset points")
    for mark in controls:
        axes.axvline(mark.at, color="gray", linestyle=":", linewidth=1)
        axes.annotate(mark.label, (mark.at, len(RAYJOB_STATES) - 0.5), fontsize="small", color="gray",
                      rotation=90, ha="right", va="top")  # fmt: skip
    axes.set_yticks(range(len(RAYJOB_STATES)), RAYJOB_STATES)
    axes.set_ylim(-0.5, len(RAYJOB_STATES) - 0.5)
    axes.set_xlabel("seconds since the workflow started")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    return save_figure(figure, path)


def write_rayservice_png(
    path: Path, timeline: HistoryTimeline, series: Mapping[str, Sequence[ClusterPoint]], title: str
) -> Path:
    marks = [(mark.at, mark.label) for mark in timeline.phases] + [
        (mark.at, f"{mark.label} (update)") for mark in timeline.controls
    ]
    return write_timeline_png(
        path, series, (), title, "", sorted(marks), xlabel="seconds since the workflow started"
    )


def summary_lines(timeline: HistoryTimeline, series: Mapping[str, Sequence[ClusterPoint]]) -> list[str]:
    lines = [f"started {timeline.started.isoformat()}"]
    lines += [f"{mark.at:8.1f} s  phase {mark.label}" for mark in timeline.phases]
    lines += [f"{mark.at:8.1f} s  update {mark.label}" for mark in timeline.controls]
    lines += [
        f"{step.at:8.1f} s  {step.cluster} {step.what} {step.before}% -> {step.after}%"
        for step in steps_of(series)
    ]
    return [lines[0], *sorted(lines[1:], key=lambda line: float(line.split(" s ")[0]))]


async def draw_timeline(ref_text: str, output: str | None, console: Console) -> int:
    ref = parse_ref(ref_text)
    path = output_path(ref.kind, ref.namespace, ref.name, output)
    client = await client_for(console)
    handle = client.get_workflow_handle(ref_id(ref))
    task_queue = settings_from(console).task_queue
    observed = await observe(ref, handle, task_queue)
    events = await run_events(client, ref_id(ref))
    if not events:
        raise CommandError(f"no history for {describe_ref(ref)}")
    timeline = timeline_from_history(events, ref.name)
    # A running workflow is drawn up to now; a closed one up to its last event.
    now = (datetime.now(UTC) - timeline.started).total_seconds()
    until = timeline.ended if observed.completed else max(now, timeline.ended)
    status = observed.status
    if ref.kind == KIND_RAYJOB:
        state = status.get("jobDeploymentStatus") or "New"
        job = status.get("jobStatus") or "-"
        title = f"RayJob {ref.namespace}/{ref.name}: {state}, Ray job {job}"
        series: dict[str, list[ClusterPoint]] = {}
        write_rayjob_png(path, timeline.phases, timeline.controls, until, title)
    else:
        series = cluster_points(timeline, until)
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName") or "-"
        title = f"RayService {ref.namespace}/{ref.name}: active cluster {active}"
        write_rayservice_png(path, timeline, series, title)
    for line in summary_lines(timeline, series):
        console.out(line)
    console.out(f"wrote {path}")
    return 0
