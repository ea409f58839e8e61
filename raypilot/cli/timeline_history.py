"""A workflow's timeline read from its history (pure): what `raypilot timeline` and the demo draw.

The history records every act with its input and the time the workflow decided it, so nothing has to be
polled while it happens, and a finished workflow (or a running one, so far) is drawn as well as a live one:

- traffic: the backend weights of each HTTPRoute the workflow created or updated (`<cluster>-serve-svc`
  backends, incremental upgrades), or the cluster the serve Service selects (blue-green: all traffic);
- capacity: the `target_capacity` of each Serve config put to a cluster's dashboard (`<cluster>-head-svc`);
- phases: every `RayPhase` search attribute upsert (a RayJob's jobDeploymentStatus, a RayService's phase);
- controls: every accepted update (`apply`, `delete`, `pause`, `resume`, `promote`, `abort`).

Events are the JSON form of a history (`temporal workflow show --output json`, `WorkflowHistory.to_json`),
whose payloads are JSON (raypilot's data converter).
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from raypilot.cli.timeline import ClusterPoint, Step
from wire import names

SERVE_SERVICE_SUFFIX = "-serve-svc"
HEAD_SERVICE_SUFFIX = "-head-svc"
PHASE_ATTRIBUTE = "RayPhase"


@dataclass(frozen=True)
class Mark:
    """Something that happened `at` seconds after the workflow started."""

    at: float
    label: str


@dataclass(frozen=True)
class ClusterChange:
    """A cluster's traffic (%) or target capacity (%) set by an act `at` seconds after the start."""

    at: float
    cluster: str
    traffic: int | None = None
    capacity: int | None = None


@dataclass(frozen=True)
class HistoryTimeline:
    started: datetime
    ended: float  # seconds from the start to the last event read
    phases: tuple[Mark, ...] = ()
    controls: tuple[Mark, ...] = ()
    changes: tuple[ClusterChange, ...] = field(default_factory=tuple)

    def clusters(self) -> list[str]:
        """The clusters in the order they first appear."""
        return list(dict.fromkeys(change.cluster for change in self.changes))


def _kind(event: Mapping[str, Any]) -> str:
    """The event type in one spelling ("EVENT_TYPE_TIMER_FIRED", "EventTypeTimerFired" -> "timerfired")."""
    text = re.sub(r"[^a-z]", "", str(event.get("eventType", "")).lower())
    return text.removeprefix("eventtype")


def _time(event: Mapping[str, Any]) -> datetime:
    return datetime.fromisoformat(str(event["eventTime"]).replace("Z", "+00:00"))


def _payload(payload: Mapping[str, Any]) -> Any:
    data = payload.get("data")
    if not isinstance(data, str):
        return None
    try:
        return json.loads(base64.b64decode(data))
    except ValueError:
        return None


def _first_input(attributes: Mapping[str, Any]) -> Any:
    payloads = (attributes.get("input") or {}).get("payloads") or []
    return _payload(payloads[0]) if payloads else None


def _route_traffic(spec: Any) -> dict[str, int]:
    """Weights per cluster of an HTTPRoute spec (the first rule with weighted serve backends)."""
    if not isinstance(spec, Mapping):
        return {}
    for rule in spec.get("rules") or []:
        weights = {
            str(ref["name"]).removesuffix(SERVE_SERVICE_SUFFIX): int(ref.get("weight", 1))
            for ref in rule.get("backendRefs") or []
            if str(ref.get("name", "")).endswith(SERVE_SERVICE_SUFFIX)
        }
        if weights:
            return weights
    return {}


def _selected_cluster(service: Mapping[str, Any]) -> str | None:
    selector = (service.get("spec") or {}).get("selector") or {}
    cluster = selector.get("ray.io/cluster")
    return str(cluster) if cluster else None


def _changes_of_act(activity: str, given: Any, at: float, serve_service: str) -> list[ClusterChange]:
    if not isinstance(given, Mapping):
        return []
    if activity in (names.CREATE_HTTPROUTE, names.UPDATE_HTTPROUTE_SPEC):
        route = given if activity == names.UPDATE_HTTPROUTE_SPEC else (given.get("body") or {})
        spec = route.get("spec")
        return [
            ClusterChange(at, cluster, traffic=weight) for cluster, weight in _route_traffic(spec).items()
        ]
    if activity == names.PUT_SERVE_CONFIG:
        head = str((given.get("target") or {}).get("head_service", ""))
        capacity = (given.get("config") or {}).get("target_capacity")
        if head.endswith(HEAD_SERVICE_SUFFIX) and isinstance(capacity, int):
            return [ClusterChange(at, head.removesuffix(HEAD_SERVICE_SUFFIX), capacity=capacity)]
        return []
    if activity in (names.CREATE_SERVICE, names.UPDATE_SERVICE_SPEC):
        body = given.get("body") if activity == names.CREATE_SERVICE else given
        if not isinstance(body, Mapping):
            return []
        # Only the RayService's serve Service: the one traffic goes through without a Gateway.
        service_name = str((body.get("metadata") or {}).get("name") or body.get("name") or "")
        cluster = _selected_cluster(body) if service_name == serve_service else None
        return [ClusterChange(at, cluster, traffic=100)] if cluster else []
    return []


def _phase_of(attributes: Mapping[str, Any]) -> str | None:
    fields = ((attributes.get("searchAttributes") or {}).get("indexedFields")) or {}
    payload = fields.get(PHASE_ATTRIBUTE)
    value = _payload(payload) if isinstance(payload, Mapping) else None
    if isinstance(value, list):  # a keyword list
        value = value[0] if value else None
    return str(value) if value else None


def timeline_from_history(events: Sequence[Mapping[str, Any]], name: str) -> HistoryTimeline:
    """The timeline of one run's events; `name` is the RayJob's or RayService's name."""
    if not events:
        raise ValueError("an empty history")
    started = _time(events[0])
    serve_service = f"{name}{SERVE_SERVICE_SUFFIX}"
    phases: list[Mark] = []
    controls: list[Mark] = []
    changes: list[ClusterChange] = []
    for event in events:
        at = (_time(event) - started).total_seconds()
        kind = _kind(event)
        if kind == "activitytaskscheduled":
            attributes = event.get("activityTaskScheduledEventAttributes") or {}
            activity = str((attributes.get("activityType") or {}).get("name", ""))
            changes += _changes_of_act(activity, _first_input(attributes), at, serve_service)
        elif kind == "upsertworkflowsearchattributes":
            phase = _phase_of(event.get("upsertWorkflowSearchAttributesEventAttributes") or {})
            if phase:
                phases.append(Mark(at, phase))
        elif kind == "workflowexecutionupdateaccepted":
            attributes = event.get("workflowExecutionUpdateAcceptedEventAttributes") or {}
            update = ((attributes.get("acceptedRequest") or {}).get("input") or {}).get("name")
            if update:
                controls.append(Mark(at, str(update)))
    ended = (_time(events[-1]) - started).total_seconds()
    return HistoryTimeline(started, ended, tuple(phases), tuple(controls), tuple(changes))


def cluster_points(timeline: HistoryTimeline, until: float | None = None) -> dict[str, list[ClusterPoint]]:
    """The traffic and capacity of every cluster after each change (a cluster's first point is where it
    appears), ending at `until` (default: the last event). A traffic change to some clusters sets the
    others to 0: one HTTPRoute (or the serve Service) sends all traffic to the clusters it names. Before
    an incremental upgrade sets a capacity, a cluster with traffic has capacity 100 (Serve's default)."""
    state: dict[str, tuple[int, int | None]] = {}
    series: dict[str, list[ClusterPoint]] = {}
    for at, group in _grouped(timeline.changes):
        traffic_set = {change.cluster: change.traffic for change in group if change.traffic is not None}
        for change in group:
            state.setdefault(change.cluster, (0, None))
        if traffic_set:
            state = {
                cluster: (traffic_set.get(cluster, 0), capacity) for cluster, (_, capacity) in state.items()
            }
        for change in group:
            if change.capacity is not None:
                state[change.cluster] = (state[change.cluster][0], change.capacity)
        for cluster, (traffic, capacity) in state.items():
            shown = capacity if capacity is not None else (100 if traffic else 0)
            series.setdefault(cluster, []).append(ClusterPoint(at, traffic, shown))
    end = timeline.ended if until is None else until
    for points in series.values():
        if points[-1].at < end:
            points.append(ClusterPoint(end, points[-1].traffic, points[-1].capacity))
    return series


def _grouped(changes: Iterable[ClusterChange]) -> list[tuple[float, list[ClusterChange]]]:
    """Changes of one instant together (an HTTPRoute update names every backend at once)."""
    groups: dict[float, list[ClusterChange]] = {}
    for change in changes:
        groups.setdefault(change.at, []).append(change)
    return sorted(groups.items())


def steps_of(series: Mapping[str, Sequence[ClusterPoint]]) -> list[Step]:
    """Every change of a cluster's traffic or capacity, in time order."""
    steps: list[Step] = []
    for cluster, points in series.items():
        for previous, current in itertools.pairwise(points):
            if current.capacity != previous.capacity:
                steps.append(Step(current.at, cluster, "capacity", previous.capacity, current.capacity))
            if current.traffic != previous.traffic:
                steps.append(Step(current.at, cluster, "traffic", previous.traffic, current.traffic))
    return sorted(steps, key=lambda step: step.at)


def rebased(series: Mapping[str, Sequence[ClusterPoint]], origin: float) -> dict[str, list[ClusterPoint]]:
    """The series as seconds since `origin` (e.g. the `apply` that began an upgrade): points before it
    collapse into where each cluster stood at `origin`."""
    result: dict[str, list[ClusterPoint]] = {}
    for cluster, points in series.items():
        before = [point for point in points if point.at <= origin]
        after = [
            ClusterPoint(point.at - origin, point.traffic, point.capacity)
            for point in points
            if point.at > origin
        ]
        start = [ClusterPoint(0.0, before[-1].traffic, before[-1].capacity)] if before else []
        if start or after:
            result[cluster] = start + after
    return result


def last_update(timeline: HistoryTimeline, update: str) -> float | None:
    """When the last accepted update of that name arrived (seconds since the start)."""
    times = [mark.at for mark in timeline.controls if mark.label == update]
    return times[-1] if times else None
