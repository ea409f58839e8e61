"""A run's history in a few lines, for a failing test to say what the workflow saw and did.

One line per event that carries a decision's input or output: activities scheduled (by type or, for local
activities, by marker) with what they returned, signals and updates received with their payloads, timers,
continue-as-new and the end. Payloads are shortened: this is evidence for a reader, not a replay.
"""

from __future__ import annotations

import json

from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import MarkerRecordedEventAttributes
from temporalio.client import WorkflowHandle

PAYLOAD_CHARS = 240


def _text(payloads: Payloads | None) -> str:
    if payloads is None or not payloads.payloads:
        return ""
    text = " ".join(payload.data.decode(errors="replace") for payload in payloads.payloads)
    return text if len(text) <= PAYLOAD_CHARS else text[: PAYLOAD_CHARS - 3] + "..."


def _marker(attributes: MarkerRecordedEventAttributes) -> str:
    """A local activity's type and result (its marker's `data` and `result`); another marker's name."""
    details = attributes.details
    if "data" not in details or not details["data"].payloads:
        return f"marker {attributes.marker_name}"
    try:
        data = json.loads(details["data"].payloads[0].data)
    except ValueError:
        return f"marker {attributes.marker_name}: {_text(details['data'])}"
    kind = data.get("activity_type") if isinstance(data, dict) else None
    if kind is None:
        return f"marker {attributes.marker_name}: {_text(details['data'])}"
    result = _text(details["result"]) if "result" in details else "(no result)"
    return f"local {kind} returned: {result}"


async def history_digest(handle: WorkflowHandle[object, object]) -> list[str]:
    """The run's events that matter for its decisions, as `<event id> <what>: <payload>` lines."""
    scheduled: dict[int, str] = {}
    lines: list[str] = []
    async for event in handle.fetch_history_events():
        kind, number = event.event_type, event.event_id
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            scheduled[number] = attributes.activity_type.name
            lines.append(f"{number} schedule {attributes.activity_type.name}: {_text(attributes.input)}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attributes = event.activity_task_completed_event_attributes
            name = scheduled.get(attributes.scheduled_event_id, "?")
            lines.append(f"{number} {name} returned: {_text(attributes.result)}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            attributes = event.activity_task_failed_event_attributes
            name = scheduled.get(attributes.scheduled_event_id, "?")
            lines.append(f"{number} {name} failed: {attributes.failure.message[:PAYLOAD_CHARS]}")
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            lines.append(f"{number} {_marker(event.marker_recorded_event_attributes)}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            attributes = event.workflow_execution_signaled_event_attributes
            lines.append(f"{number} signal {attributes.signal_name}: {_text(attributes.input)}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            lines.append(f"{number} update {request.input.name}: {_text(request.input.args)}")
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            timeout = event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
            lines.append(f"{number} timer {timeout.total_seconds():g} s")
        elif kind == EventType.EVENT_TYPE_TIMER_FIRED:
            lines.append(f"{number} timer fired")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            result = event.workflow_execution_completed_event_attributes.result
            lines.append(f"{number} completed: {_text(result)}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            lines.append(f"{number} continued as new")
    return lines
