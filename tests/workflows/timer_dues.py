"""When a workflow's durable timers were due, read from its history: where step timing is decided.

A wall-clock gap between two steps also holds every delay of the machine that runs the test (a starved
worker, a slow activity); the instant a timer was set for is the workflow's own decision. Its workflow time is
the start of the workflow task that set it (`workflow.now()` there), plus its start-to-fire timeout.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle, WorkflowHistory

# The summary of the RayJob workflow's deletion timers (its deletion policies, TTLs, cleanup-after).
DELETION_TIMER_SUMMARY = "deletion policy due"


def _timer_starts(events: Iterable[HistoryEvent]) -> Iterator[tuple[datetime, timedelta]]:
    """Each durable timer's due instant and duration, in the order the timers were started."""
    task_started: datetime | None = None
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started = event.event_time.ToDatetime(tzinfo=UTC)
        elif event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            assert task_started is not None, "a timer started outside a workflow task"
            timeout = event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
            yield task_started + timeout, timeout


def timer_dues(history: WorkflowHistory) -> list[datetime]:
    """Every durable timer's due instant, in the order the timers were started."""
    return [due for due, _ in _timer_starts(history.events)]


async def timers_lasting(handle: WorkflowHandle[Any, Any], duration: timedelta) -> list[datetime]:
    """The due instants of the workflow's durable timers that were started for exactly `duration`."""
    history = await handle.fetch_history()
    return [due for due, timeout in _timer_starts(history.events) if timeout == duration]


def acts_with_decision_times(history: WorkflowHistory, activity: str) -> list[tuple[datetime, Any]]:
    """Each scheduling of `activity` with the workflow time of the task that decided it and its first input
    (raypilot's payloads are JSON)."""
    task_started: datetime | None = None
    acts: list[tuple[datetime, Any]] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started = event.event_time.ToDatetime(tzinfo=UTC)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name != activity:
                continue
            assert task_started is not None, "an activity scheduled outside a workflow task"
            payloads = attributes.input.payloads
            acts.append((task_started, json.loads(payloads[0].data) if payloads else None))
    return acts


def steps_timed_by_timers(
    steps: list[datetime],
    interval: timedelta,
    dues: list[datetime],
    tolerance: timedelta,
    untimed: frozenset[int] = frozenset(),
) -> list[str]:
    """What is wrong with `steps` (empty: nothing) for steps that are each due `interval` after the one
    before: no step came earlier than that, and a durable timer was set for that very instant (within
    `tolerance`, the rounding of a timestamp), except for the steps numbered in `untimed` (from 0), which
    wait on something else too."""
    problems = []
    for number, (earlier, later) in enumerate(itertools.pairwise(steps), start=1):
        due = earlier + interval
        if later < due - tolerance:
            problems.append(
                f"step {number} at {later:%H:%M:%S.%f} came before its due time {due:%H:%M:%S.%f}"
            )
        if number not in untimed and not any(abs(timer - due) <= tolerance for timer in dues):
            timers = [f"{timer:%H:%M:%S.%f}" for timer in dues]
            problems.append(
                f"no timer was set for step {number}'s due time {due:%H:%M:%S.%f} (timers: {timers})"
            )
    return problems


async def deletion_timer_windows(handle: WorkflowHandle[Any, Any]) -> list[tuple[datetime, datetime]]:
    """For each deletion timer in the history, the instants it can have been set for: the workflow armed it
    at `workflow.now() + duration`, and workflow.now() lies between the start of that workflow task and the
    recording of the timer. Unlike the time a timer fired, this does not depend on the machine's load."""
    windows: list[tuple[datetime, datetime]] = []
    task_started: datetime | None = None
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_started_event_attributes"):
            task_started = event.event_time.ToDatetime(tzinfo=UTC)
        elif (
            event.HasField("timer_started_event_attributes")
            and task_started is not None
            and DELETION_TIMER_SUMMARY.encode() in event.user_metadata.summary.data
        ):
            duration = event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
            recorded = event.event_time.ToDatetime(tzinfo=UTC)
            windows.append((task_started + duration, recorded + duration))
    return windows


async def deletion_timer_firings(handle: WorkflowHandle[Any, Any]) -> list[tuple[datetime, list[str]]]:
    """For each deletion timer that fired: when the server fired it, and the activities the workflow ran from
    then until it started a timer again (or its history ends): ordinary ones by type, local ones by the
    summary raypilot gives them (their name). What a woken workflow did next is its own decision; how long
    the machine took to carry it out is not."""
    deletion_timers: set[int] = set()
    firings: list[tuple[datetime, list[str]]] = []
    collecting = False
    async for event in handle.fetch_history_events():
        if event.HasField("timer_started_event_attributes"):
            collecting = False
            if DELETION_TIMER_SUMMARY.encode() in event.user_metadata.summary.data:
                deletion_timers.add(event.event_id)
        elif event.HasField("timer_fired_event_attributes"):
            if event.timer_fired_event_attributes.started_event_id in deletion_timers:
                firings.append((event.event_time.ToDatetime(tzinfo=UTC), []))
                collecting = True
        elif event.HasField("activity_task_scheduled_event_attributes") and collecting:
            firings[-1][1].append(event.activity_task_scheduled_event_attributes.activity_type.name)
        elif event.HasField("marker_recorded_event_attributes") and collecting:
            firings[-1][1].append(json.loads(event.user_metadata.summary.data))
    return firings
