"""The suite's arithmetic, pure and unit-tested: percentiles, ratios, KubeRay's tick model, and the Temporal
actions a workflow history costs.

Every figure of the suite is a ratio or a count measured in the same run as its reference, so nothing here
knows about absolute speeds of this machine.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

# KubeRay's cadences (kuberay-behavior.md): the RayService controller requeues every 2 s, the RayJob
# controller every 3 s and reads the dashboard each time.
KUBERAY_RAYSERVICE_TICK_S = 2.0
KUBERAY_RAYJOB_TICK_S = 3.0

# History events that Temporal Cloud bills as one action each (docs: "What is an Action?"): starting a
# workflow (also by continue-as-new), scheduling an activity (retries are counted from the attempt number),
# starting a timer, a local activity (one marker), a signal, an accepted update, a search attribute upsert,
# starting a child workflow, signalling or cancelling another workflow. Heartbeats reaching the server are
# actions too but leave no event: they are counted apart (`heartbeats_reaching_server`).
BILLED_EVENTS = frozenset(
    {
        "workflowexecutionstarted",
        "activitytaskscheduled",
        "timerstarted",
        "markerrecorded",
        "workflowexecutionsignaled",
        "workflowexecutionupdateaccepted",
        "upsertworkflowsearchattributes",
        "workflowpropertiesmodified",
        "startchildworkflowexecutioninitiated",
        "signalexternalworkflowexecutioninitiated",
        "requestcancelexternalworkflowexecutioninitiated",
    }
)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between the closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0..100, got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ratio(measured: float, reference: float) -> float:
    """measured / reference; infinite when the reference is 0 and the measure is not (0/0 is 1: equal)."""
    if reference == 0:
        return 1.0 if measured == 0 else math.inf
    return measured / reference


def cpu_ms_each(cpu_seconds: float, items: int) -> float:
    """CPU milliseconds per item of a batch of `items` that took `cpu_seconds` in all."""
    if items <= 0:
        raise ValueError(f"a batch of {items} items has no per-item cost")
    return 1000.0 * cpu_seconds / items


def cpu_bound_ratio(reference_ms: Iterable[float], measured_ms: Iterable[float]) -> float:
    """The most a throughput ratio can be when every process on the same cores is CPU-bound: the reference's
    CPU per item over the measured's (each the sum of the processes' ms per item). P5: bare Temporal's
    worker + server over raypilot's worker + server; leaving the stack's processes out gives the bound of
    a free simulator."""
    return ratio(sum(reference_ms), sum(measured_ms))


def cpu_for_ratio(reference_ms: Iterable[float], target: float) -> float:
    """The CPU per item (all the measured processes together) at which `cpu_bound_ratio` reaches `target`."""
    if target <= 0:
        raise ValueError(f"a ratio of {target} needs no bound")
    return sum(reference_ms) / target


def kuberay_tick_after(due_s: float, tick_s: float, phase_s: float = 0.0) -> float:
    """When a reconcile loop ticking every `tick_s` from `phase_s` first acts on a deadline due at `due_s`
    (KubeRay keeps deadlines in memory and checks them at its next requeue)."""
    if due_s <= phase_s:
        return phase_s
    return phase_s + tick_s * math.ceil((due_s - phase_s) / tick_s - 1e-9)


def kuberay_step_errors(step_count: int, interval_s: float, tick_s: float) -> list[float]:
    """KubeRay's incremental upgrade: a traffic step is due `interval_s` after the previous one but happens
    at the next reconcile tick. Best case for KubeRay (ticks phased on each step): how late each of the
    `step_count - 1` later steps lands."""
    landed = [0.0]
    for _ in range(step_count - 1):
        landed.append(kuberay_tick_after(landed[-1] + interval_s, tick_s, phase_s=landed[-1]))
    return [gap - interval_s for gap in gaps(landed)]


def gaps(times: Sequence[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def event_kind(event: Mapping[str, Any]) -> str:
    """'activitytaskscheduled' from any spelling of a history event's type: the proto JSON enum
    ("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") or the temporal CLI's ("ActivityTaskScheduled")."""
    raw = str(event.get("eventType") or event.get("event_type") or "")
    if raw.upper().startswith("EVENT_TYPE_"):
        raw = raw[len("EVENT_TYPE_") :]
    return raw.replace("_", "").lower()


def _attributes(event: Mapping[str, Any], suffix: str) -> Mapping[str, Any]:
    for key, value in event.items():
        if key.lower().endswith(suffix) and isinstance(value, Mapping):
            return value
    return {}


@dataclass(frozen=True)
class ActionCount:
    """Billable actions of one history: per billed event kind, and activity retries (attempt > 1)."""

    by_kind: Mapping[str, int]
    retries: int

    @property
    def total(self) -> int:
        return sum(self.by_kind.values()) + self.retries


def count_actions(events: Iterable[Mapping[str, Any]]) -> ActionCount:
    """The billable actions a recorded history shows (heartbeats excluded: they leave no event)."""
    kinds: Counter[str] = Counter()
    retries = 0
    for event in events:
        kind = event_kind(event)
        if kind in BILLED_EVENTS:
            kinds[kind] += 1
        elif kind == "activitytaskstarted":
            attempt = int(_attributes(event, "activitytaskstartedeventattributes").get("attempt") or 1)
            retries += max(0, attempt - 1)
    return ActionCount(dict(kinds), retries)


def heartbeats_reaching_server(seconds: float, call_interval_s: float, throttle_s: float) -> int:
    """Heartbeats an activity running `seconds` sends to the server when it calls heartbeat every
    `call_interval_s`: the SDK sends the first at once and then at most one per throttle interval (the
    worker's throttle, capped by 0.8 x the heartbeat timeout)."""
    if seconds <= 0:
        return 0
    period = max(call_interval_s, throttle_s)
    return 1 + int(seconds // period)


def heartbeat_throttle_s(
    heartbeat_timeout_s: float | None, max_throttle_s: float, default_throttle_s: float
) -> float:
    """How often at most the worker sends an activity's heartbeats to the server (temporalio's `Worker`:
    0.8 x the activity's heartbeat timeout, capped by `max_heartbeat_throttle_interval`; without a heartbeat
    timeout `default_heartbeat_throttle_interval`). Heartbeat calls in between are held back, not sent."""
    if heartbeat_timeout_s is None or heartbeat_timeout_s <= 0:
        return default_throttle_s
    return min(0.8 * heartbeat_timeout_s, max_throttle_s)


def parse_duration_s(value: Any) -> float | None:
    """A protobuf JSON duration ("30s", "0.500s") in seconds; None when absent."""
    if value is None or value == "":
        return None
    text = str(value)
    return float(text[:-1] if text.endswith("s") else text)


def aware(moment: datetime) -> datetime:
    """A naive datetime taken as UTC (the test server's clock is naive, event times are not)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_event_time(value: Any) -> datetime:
    """An event's eventTime: RFC 3339 text (JSON histories) or a datetime."""
    if isinstance(value, datetime):
        return aware(value)
    text = str(value).replace("Z", "+00:00")
    if "." in text:  # Python's fromisoformat takes at most 6 fractional digits
        head, rest = text.split(".", 1)
        digits = "".join(ch for ch in rest if ch.isdigit())
        zone = rest[len(digits) :]
        text = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    return aware(datetime.fromisoformat(text))


@dataclass(frozen=True)
class ActivitySpan:
    activity_type: str
    seconds: float  # scheduled -> closed (completed, failed, timed out, cancelled), or to the history's end
    heartbeat_timeout_s: float | None = None  # as scheduled
    start_to_close_s: float | None = None  # as scheduled: one attempt's budget


def activity_spans(
    events: Sequence[Mapping[str, Any]], since: datetime | None = None, until: datetime | None = None
) -> list[ActivitySpan]:
    """How long each ordinary activity of a history was outstanding within [since, until] (default: the
    history's first and last event), from its scheduled and closing events' times."""
    if not events:
        return []
    start = (
        aware(since) if since else parse_event_time(events[0].get("eventTime") or events[0].get("event_time"))
    )
    end = (
        aware(until)
        if until
        else parse_event_time(events[-1].get("eventTime") or events[-1].get("event_time"))
    )
    opened: dict[int, tuple[ActivitySpan, datetime]] = {}
    spans: list[ActivitySpan] = []
    closing = ("completed", "failed", "timedout", "canceled")

    def clipped(scheduled_as: ActivitySpan, scheduled: datetime, closed: datetime) -> None:
        seconds = (min(closed, end) - max(scheduled, start)).total_seconds()
        if seconds > 0:
            spans.append(replace(scheduled_as, seconds=seconds))

    for event in events:
        kind = event_kind(event)
        when = parse_event_time(event.get("eventTime") or event.get("event_time"))
        if kind == "activitytaskscheduled":
            attributes = _attributes(event, "activitytaskscheduledeventattributes")
            name = str((attributes.get("activityType") or {}).get("name") or "")
            scheduled_as = ActivitySpan(
                name,
                0.0,
                parse_duration_s(attributes.get("heartbeatTimeout")),
                parse_duration_s(attributes.get("startToCloseTimeout")),
            )
            opened[int(event.get("eventId") or event.get("event_id") or 0)] = (scheduled_as, when)
        elif kind.startswith("activitytask") and kind.removeprefix("activitytask") in closing:
            attributes = next(
                (value for key, value in event.items() if key.lower().endswith("eventattributes")), {}
            )
            scheduled = int(attributes.get("scheduledEventId") or 0)
            if scheduled in opened:
                scheduled_as, began = opened.pop(scheduled)
                clipped(scheduled_as, began, when)
    for scheduled_as, began in opened.values():
        clipped(scheduled_as, began, end)
    return spans


@dataclass
class Figure:
    """One row of the suite's table."""

    id: str
    figure: str
    measured: str
    reference: str
    target: str
    met: bool | None  # None: reported, no target
    notes: list[str] = field(default_factory=list)


def verdict(met: bool | None) -> str:
    return {True: "met", False: "MISSED", None: "report"}[met]


def markdown_table(figures: Sequence[Figure]) -> str:
    lines = [
        "| id | figure | measured | reference (same run) | target | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for row in figures:
        cells = [row.id, row.figure, row.measured, row.reference, row.target, verdict(row.met)]
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |")
    return "\n".join(lines)


def signal_times(events: Iterable[Mapping[str, Any]], signal_name: str) -> list[datetime]:
    """When a history received each signal of that name, in order."""
    times = []
    for event in events:
        if event_kind(event) != "workflowexecutionsignaled":
            continue
        if _attributes(event, "workflowexecutionsignaledeventattributes").get("signalName") == signal_name:
            times.append(parse_event_time(event.get("eventTime") or event.get("event_time")))
    return times


def observer_run_actions(watches: int) -> int:
    """The billed events of one observer run (workflows/observer: the Ray job observer, the Kubernetes
    observer) that serves `watches` registrations and then idles out: its start and each watch (the first
    comes by signal-with-start: WorkflowExecutionStarted and WorkflowExecutionSignaled), its one activity's
    schedule, an unwatch signal per watch (the watched job or object reached its goal; watches done in the
    same round of the activity share one, so this is the most) and the idle timer. Its completion is not
    billed. With k watches each pays at most 2 of these and a k-th of the other 3."""
    return 1 + watches + 1 + watches + 1


def observer_heartbeats(life_s: float, period_s: float, *, first_at_once: bool) -> int:
    """Heartbeats an observer activity sends while it lives `life_s` (from its schedule until its workflow
    cancels it and completes) beating every `period_s` (a minute or more: the worker's 2 s throttle never
    holds one back): the first at once or only after a period. The beat after the end, which finds the
    workflow closed, is not recorded, so not counted."""
    if life_s <= 0:
        return 0
    return (1 if first_at_once else 0) + int(life_s // period_s)
