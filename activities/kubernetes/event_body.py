"""The core/v1 Event objects raypilot posts: their deterministic names and their bodies (the Event activity
and the create/delete activities that post an act's Event themselves build them here)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Final

from wire.kubernetes import RecordEvent

EVENT_SOURCE_COMPONENT: Final = "raypilot"
MAX_EVENT_MESSAGE_CHARS: Final = 1024
MAX_NAME_CHARS: Final = 253
_NAME_INVALID = re.compile(r"[^a-z0-9.-]+")


def event_name(object_name: str, event_id: str) -> str:
    """`<object>.<id>` as a valid object name (lower case, [a-z0-9.-], at most 253 characters)."""
    name = _NAME_INVALID.sub("-", f"{object_name}.{event_id}".lower()).strip("-.")
    return name[:MAX_NAME_CHARS].rstrip("-.") or "event"


def event_body(request: RecordEvent, now: datetime) -> dict[str, Any]:
    involved = request.involved
    timestamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    involved_object = {"kind": involved.kind, "name": involved.name, "namespace": involved.namespace}
    if involved.uid:
        involved_object["uid"] = involved.uid
    if involved.api_version:
        involved_object["apiVersion"] = involved.api_version
    message = request.message
    if len(message) > MAX_EVENT_MESSAGE_CHARS:
        message = message[: MAX_EVENT_MESSAGE_CHARS - 3] + "..."
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(involved.name, request.event_id), "namespace": involved.namespace},
        "involvedObject": involved_object,
        "reason": request.reason,
        "message": message,
        "type": request.type,
        "count": 1,
        "firstTimestamp": timestamp,
        "lastTimestamp": timestamp,
        "source": {"component": EVENT_SOURCE_COMPONENT},
        "reportingComponent": EVENT_SOURCE_COMPONENT,
        "reportingInstance": EVENT_SOURCE_COMPONENT,
    }
