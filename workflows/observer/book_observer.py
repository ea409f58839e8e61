"""What the two observer workflows (the Ray job observer and the Kubernetes observer) are alike: a watch book
carried through continue-as-new, the one observer activity, the handlers other workflows and the activity
call (`unwatch`, `worker-started`, the `watches` query) and the run (workflows/observer/loop.py).

Each observer declares its own `watch` signal, `__init__` and `run`: Temporal decodes a signal's argument into
the type its handler names (a generic handler would hand the book plain dicts), and a workflow's run must be
declared on its own class. Both observers' handler names are the same (`wire.kubernetes_observer`'s KUBE_*
names equal `wire.observer`'s; tests/workflows/observer/test_handlers.py holds them to it).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Generic, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wire.observer import (
        UNWATCH_KEYS_SIGNAL,
        UNWATCH_SIGNAL,
        WATCHES_QUERY,
        WORKER_STARTED_SIGNAL,
    )
    from wire.packing import pack
    from wire.watch_book import BookChanges, VersionedBook, packed_book_changes

from workflows.observer.loop import ObserverActivity, observe_then_continue

W = TypeVar("W")


class BookObserver(Generic[W]):
    """An observer workflow's book of watches of type `W` and its activity; `WATCHES` is the book's watches'
    type at run time (`dict[str, W]`: packing needs it)."""

    WATCHES: ClassVar[type[dict[str, Any]]]
    book: VersionedBook[W]
    observer: ObserverActivity

    @workflow.signal(name=UNWATCH_SIGNAL)
    def unwatch(self, key: str) -> None:
        self.book.unwatch(key)

    @workflow.signal(name=UNWATCH_KEYS_SIGNAL)
    def unwatch_keys(self, keys: list[str]) -> None:
        """The watches one round of the activity found done (one signal for all of them)."""
        for key in keys:
            self.book.unwatch(key)

    @workflow.signal(name=WORKER_STARTED_SIGNAL)
    def worker_started(self, identity: str) -> None:
        self.observer.restart_asked = True

    @workflow.query(name=WATCHES_QUERY)
    def watches(self, since: int) -> BookChanges[W]:
        changes = packed_book_changes(self.book.changes_since(since), self.WATCHES)
        return dataclasses.replace(changes, epoch_ms=self.observer.epoch_ms)

    async def observe(self, namespace: str) -> None:
        """The run: observe while there are watches, then end or continue as new with the book packed."""
        await observe_then_continue(
            self.observer,
            namespace,
            lambda: self.book.watches,
            lambda: pack(self.book.watches, self.WATCHES),
        )
