"""A failed RayJob's driver log, saved before its RayCluster goes (docs/logs.md): what the workflow asks the
`dashboard.save_driver_log` activity, what it answers, the key of the full log in the log store, and how
much of the log's end each place keeps (pure: the activity, the workflow and the CLI all import it).

The log itself never enters workflow history: the activity reads it from the dashboard, puts it whole into
the worker's log store (when one is configured), posts the Event with its last lines, and answers with the
short tail the RayJob's status shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from wire.dashboard import DashboardTarget
from wire.kubernetes import RecordEvent

__all__ = [
    "EVENT_TAIL",
    "STATUS_TAIL",
    "DriverLogSaved",
    "SaveDriverLog",
    "TailBound",
    "log_store_key",
    "log_tail",
]


@dataclass(frozen=True)
class TailBound:
    """At most `lines` lines and `max_bytes` bytes (UTF-8) of a log's end."""

    lines: int
    max_bytes: int


# The RayJob's status (condition DriverLogSaved): it is the workflow's state and result, so in its history:
# small. The full log is the log store's.
STATUS_TAIL: Final = TailBound(lines=50, max_bytes=4096)
# A core/v1 Event's message: the events.k8s.io API takes a note of at most 1 KiB, and raypilot's Events keep
# to it (activities/kubernetes/event_body.py), with room for the header line.
EVENT_TAIL: Final = TailBound(lines=10, max_bytes=768)


def log_tail(text: str, bound: TailBound) -> str:
    """The end of `text` within `bound`: whole lines, the newest last. A last line longer than the byte
    bound keeps its end (a line is cut only when not even one fits whole)."""
    if bound.lines <= 0 or bound.max_bytes <= 0 or not text:
        return ""
    lines = text.rstrip("\n").split("\n")[-bound.lines :]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        cost = len(line.encode()) + (1 if kept else 0)
        if size + cost > bound.max_bytes:
            break
        kept.append(line)
        size += cost
    if not kept:
        end = lines[-1].encode()[-bound.max_bytes :]
        return end.decode(errors="ignore")
    return "\n".join(reversed(kept))


_SAFE_PART = re.compile(r"^[A-Za-z0-9._-]+$")


def _key_part(part: str) -> str:
    """One path segment of a store key: names as they are; anything else (a user's jobId with a slash,
    `..`) percent-encoded, so a key never leaves its RayJob's folder."""
    if _SAFE_PART.match(part) and part not in (".", ".."):
        return part
    return "".join(
        char if _SAFE_PART.match(char) and char != "." else "".join(f"%{byte:02X}" for byte in char.encode())
        for char in part
    )


def log_store_key(namespace: str, name: str, submission_id: str) -> str:
    """`<namespace>/<name>/<submission id>.log`: where a Ray job's full driver log is kept (deterministic, so
    a retried upload writes the same object)."""
    return f"{_key_part(namespace)}/{_key_part(name)}/{_key_part(submission_id)}.log"


@dataclass(frozen=True)
class SaveDriverLog:
    """Save the driver log of the Ray job `submission_id` of RayJob `namespace/name`: the full log into the
    worker's log store (if any), the last lines as `event` (its message is the activity's to write)."""

    target: DashboardTarget
    submission_id: str
    namespace: str
    name: str
    event: RecordEvent


@dataclass(frozen=True)
class DriverLogSaved:
    """What the activity did. `found`: the dashboard had the job's log (False: it answered 404, the job was
    never submitted). `tail`: the log's end within `STATUS_TAIL`. `stored`: where the full log went
    (`file://...` or `s3://...`, "" without a log store); `store_error`: why a configured store refused it
    for good. `event_message`: the message of the Event posted."""

    found: bool
    total_bytes: int = 0
    tail: str = ""
    stored: str = ""
    store_error: str = ""
    event_message: str = ""
