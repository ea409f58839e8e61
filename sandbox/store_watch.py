"""What the Store's watches are made of: events, the change history entries and the per-watch filter, and the
Store's watch methods (`StoreWatches`, a base of `Store`: those methods are the Store's, moved here
unchanged)."""

from __future__ import annotations

import asyncio
import builtins
import copy
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.resources import ResourceType
from sandbox.selectors import SelectorError, field_matcher, label_matcher
from sandbox.store_errors import ApiError, bad_request
from sandbox.store_types import StoreTypes


@dataclass(frozen=True)
class WatchEvent:
    type: str  # "ADDED" | "MODIFIED" | "DELETED"
    object: dict[str, Any]


@dataclass(frozen=True)
class Change:
    resource_version: int
    rt: ResourceType
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None


@dataclass(eq=False)
class Watcher:
    rt: ResourceType
    namespace: str | None
    matches_labels: Callable[[Mapping[str, str]], bool]
    matches_fields: Callable[[Mapping[str, Any]], bool]
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)

    def selects(self, obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.matches_labels(meta.get("labels") or {}) and self.matches_fields(obj)

    def translate(self, change: Change) -> WatchEvent | None:
        """The event this watcher sees; an object entering or leaving its selector is ADDED or DELETED."""
        if change.rt != self.rt:
            return None
        selected_now = self.selects(change.obj)
        if change.type != "MODIFIED":
            return WatchEvent(change.type, change.obj) if selected_now else None
        selected_before = change.old is not None and self.selects(change.old)
        if selected_now:
            return WatchEvent("MODIFIED" if selected_before else "ADDED", change.obj)
        return WatchEvent("DELETED", change.obj) if selected_before else None

    @classmethod
    def for_selectors(
        cls, rt: ResourceType, namespace: str | None, label_selector: str | None, field_selector: str | None
    ) -> Watcher:
        """A watcher of rt objects in namespace (None: all) matching both selectors; 400 if one is invalid."""
        try:
            return cls(rt, namespace, label_matcher(label_selector), field_matcher(field_selector, rt.kind))
        except SelectorError as exc:
            raise bad_request(str(exc)) from None


class StoreWatches(StoreTypes):
    # Set by Store.__init__.
    _objects: dict[ResourceType, dict[tuple[str, str], dict[str, Any]]]
    _history: deque[Change]
    _compacted_rv: int
    _current_rv: int
    _watchers: set[Watcher]

    # ---- watch -------------------------------------------------------------------------------------------
    async def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Changes of one kind. Without a resourceVersion (or "0"), first an ADDED event per existing object;
        with one, every change after it (ApiError 410 Expired when that is older than the kept history).
        Ends when the store is closed."""
        rt = self.resource_type(api_version, kind)
        watcher = Watcher.for_selectors(
            rt, namespace if rt.namespaced else None, label_selector, field_selector
        )
        backlog = self._backlog(watcher, resource_version)
        self._watchers.add(watcher)
        try:
            for event in backlog:
                yield WatchEvent(event.type, copy.deepcopy(event.object))
            while True:
                next_event = await watcher.queue.get()
                if next_event is None:
                    return
                yield WatchEvent(next_event.type, copy.deepcopy(next_event.object))
        finally:
            self._watchers.discard(watcher)

    def _backlog(self, watcher: Watcher, resource_version: str | None) -> builtins.list[WatchEvent]:
        if resource_version in (None, "", "0"):
            objects = sorted(self._objects[watcher.rt].items())
            return [WatchEvent("ADDED", obj) for _, obj in objects if watcher.selects(obj)]
        try:
            since = int(resource_version)
        except ValueError:
            raise bad_request(f"invalid resource version {resource_version!r}") from None
        if since < self._compacted_rv:
            raise ApiError(410, "Expired", f"too old resource version: {since} ({self._compacted_rv})")
        events = (watcher.translate(change) for change in self._history if change.resource_version > since)
        return [event for event in events if event is not None]

    def compact(self) -> None:
        """Forget the change history, as etcd compaction does: older watches then get 410 Expired."""
        self._history.clear()
        self._compacted_rv = self._current_rv

    def close(self) -> None:
        """End every open watch."""
        for watcher in list(self._watchers):
            watcher.queue.put_nowait(None)
        self._watchers.clear()
