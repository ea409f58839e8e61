"""Watch streams: newline-delimited JSON events, the way kube-apiserver sends them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from sandbox import apiserver_tables as tables
from sandbox.apiserver_paths import ResourcePath
from sandbox.selectors import SelectorError, field_matcher, label_matcher
from sandbox.store import ApiError, Store, WatchEvent
from sandbox.store_errors import bad_request

DEFAULT_WATCH_TIMEOUT_S = 1800.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _validate(query: Any, kind: str) -> str | None:
    try:
        label_matcher(query.get("labelSelector"))
        field_matcher(query.get("fieldSelector"), kind)
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    resource_version: str | None = query.get("resourceVersion") or None
    if resource_version is not None and not resource_version.isdigit():
        raise bad_request(f"invalid resource version {resource_version!r}")
    return resource_version


class _EventWriter:
    def __init__(self, response: web.StreamResponse, target: ResourcePath, request: web.Request) -> None:
        self.response = response
        self.rt = target.rt
        self.as_table = tables.wants_table(request.headers.get("Accept", ""))
        self.include_object = request.query.get("includeObject", "Metadata")
        self._definitions_sent = False

    async def write(self, event_type: str, obj: dict[str, Any]) -> None:
        if self.as_table and event_type != "BOOKMARK":
            obj = tables.table(
                self.rt,
                [obj],
                obj["metadata"].get("resourceVersion", ""),
                self.include_object,
                with_definitions=not self._definitions_sent,
            )
            self._definitions_sent = True
        await self.response.write(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")

    async def send(self, event: WatchEvent) -> None:
        await self.write(event.type, event.object)


async def serve_watch(
    store: Store, request: web.Request, target: ResourcePath, running: set[asyncio.Task[Any]]
) -> web.StreamResponse:
    """Stream changes until timeoutSeconds, the client leaving or the server stopping. A too old
    resourceVersion ends the stream with an ERROR event carrying a 410 Expired Status, as in Kubernetes."""
    rt, query = target.rt, request.query
    resource_version = _validate(query, rt.kind)
    timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S)
    content_type = (
        tables.TABLE_CONTENT_TYPE if tables.wants_table(request.headers.get("Accept", "")) else None
    )
    response = web.StreamResponse(status=200, headers={"Content-Type": content_type or "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    writer = _EventWriter(response, target, request)
    labels, fields = query.get("labelSelector"), query.get("fieldSelector")
    initial: list[dict[str, Any]] = []
    if query.get("sendInitialEvents") == "true":
        # Watch-list: the current state as ADDED events, a bookmark marking its end, then the changes.
        initial = store.list(rt.api_version, rt.kind, target.namespace, labels, fields)
        resource_version = store.resource_version
    events = store.watch(rt.api_version, rt.kind, target.namespace, resource_version, labels, fields)
    task = asyncio.current_task()
    if task is not None:
        running.add(task)
    try:
        async with asyncio.timeout(timeout):
            if query.get("sendInitialEvents") == "true":
                for obj in initial:
                    await writer.write("ADDED", obj)
                bookmark = {
                    "kind": rt.kind,
                    "apiVersion": rt.api_version,
                    "metadata": {
                        "resourceVersion": resource_version,
                        "annotations": {INITIAL_EVENTS_END: "true"},
                    },
                }
                await writer.write("BOOKMARK", bookmark)
            async for event in events:
                await writer.send(event)
    except TimeoutError:
        pass  # timeoutSeconds elapsed: end normally; clients resume from their last resourceVersion
    except ApiError as exc:
        await response.write(json.dumps({"type": "ERROR", "object": exc.to_status()}).encode() + b"\n")
    except (ConnectionResetError, asyncio.CancelledError):
        return response  # the client went away, or the server is stopping
    finally:
        await events.aclose()
        if task is not None:
            running.discard(task)
    await response.write_eof()
    return response
