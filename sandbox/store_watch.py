"""What the Store's watches are made of: events, the change history entries and the per-watch filter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.resources import ResourceType
from sandbox.selectors import SelectorError, field_matcher, label_matcher
from sandbox.store_errors import bad_request


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
