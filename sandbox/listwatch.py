"""List-then-watch of one kind on a real API server, for the processes that stand beside it (the node agent,
the Gateway controller): the kubernetes client's watch blocks, so each kind is read on a thread of its own and
hands what it reads to the caller's event loop.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import watch

__all__ = ["SYNC", "WATCH_TIMEOUT_S", "Deliver", "list_then_watch"]

log = logging.getLogger(__name__)
WATCH_TIMEOUT_S = 60
SYNC = "SYNC"  # the event type of a whole listing: its object is the list, with "items"

Deliver = Callable[[str, str, dict[str, Any]], None]  # (kind, event type, object), called on the thread


def list_then_watch(
    kind: str, list_call: Callable[..., Any], deliver: Deliver, stop: threading.Event
) -> None:
    """Until `stop` is set: list (delivered as one SYNC), then watch from that listing's resourceVersion. A
    watch that ends, expires (410 Gone arrives as an ERROR event) or fails is listed again; a failure first
    waits a second, so an API server that is down is not hammered."""
    while not stop.is_set():
        try:
            listing = json.loads(list_call(_preload_content=False).data)
            deliver(kind, SYNC, listing)
            for event in watch.Watch().stream(
                list_call,
                resource_version=listing["metadata"]["resourceVersion"],
                timeout_seconds=WATCH_TIMEOUT_S,
                allow_watch_bookmarks=True,
            ):
                if stop.is_set():
                    return
                if event["type"] == "ERROR":
                    break
                if event["type"] != "BOOKMARK":
                    deliver(kind, event["type"], event["raw_object"])
        except Exception as error:
            log.warning("%s watch failed (%s); listing again", kind, error)
            stop.wait(1.0)
