"""The watch book of an observer workflow, shared by the Ray job observer (`wire.observer.WatchBook`) and the
Kubernetes observer (`wire.kubernetes_observer.ObjectWatchBook`): which workflow waits for what, versioned so
that the observer activity reads only what changed since its last look (`changes_since`, answered by the
`watches` query), the activity's side of that exchange (`BookCopy`), and how the views it sends order
(`is_newer_view`).

Pure: workflows and activities both import this module. A book is workflow state: observer workflows carry
it through continue-as-new and receive it as an argument from runs of older code, so its JSON shape (the
field names below) and that of `BookChanges` are kept as they were before the two books became one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar, Final, Generic, Self, TypeVar

from wire.packing import pack, unpack

W = TypeVar("W")

# Removals remembered back: a reader older than the oldest remembered one gets the whole book.
TOMBSTONES: Final = 10_000

# A query answer with more added watches than this carries them packed.
PACK_ABOVE: Final = 200


@dataclass(frozen=True)
class BookChanges(Generic[W]):
    """The answer of the `watches` query: the watches added and removed after `since` (all of them when
    `full`), and the book's version now."""

    version: int
    added: dict[str, W] = field(default_factory=dict)  # by the book's key
    removed: list[str] = field(default_factory=list)
    full: bool = False
    # The epoch of the observer's current activity (0: not said): an activity of another epoch was replaced
    # and stops, so that a lost attempt still running neither signals nor unwatches any more.
    epoch_ms: int = 0
    # `added` packed (wire.packing) when it is large (the whole book after a restart): a query's answer is
    # one payload, and 10,000 watches are over Temporal's 2 MB limit as plain JSON.
    packed: str = ""


@dataclass
class VersionedBook(Generic[W]):
    """An observer workflow's watches, versioned so that its activity reads only what changed. Removals are
    remembered up to `TOMBSTONES` back; a reader older than that gets the whole book.

    A subclass names its watch type (redeclaring `watches` with it, so that pydantic decodes a book argument
    into watches rather than plain dicts), how a watch is keyed (`key_of`) and whether registering a watch
    already there counts as a change (`REGISTRATION_REFRESHES`)."""

    watches: dict[str, W] = field(default_factory=dict)
    added_at: dict[str, int] = field(default_factory=dict)
    # In the order of removal (so the oldest is first): forgetting one is O(1), not a search of 10,000.
    removed_at: dict[str, int] = field(default_factory=dict)
    version: int = 0
    # Removals older than this version were forgotten: a reader behind it reads the whole book.
    forgotten_before: int = 0

    # True: a registration of a watch already there (even an identical one) bumps it, so the activity sends
    # its view again. False: a repeated identical registration changes nothing.
    REGISTRATION_REFRESHES: ClassVar[bool] = False

    @classmethod
    def key_of(cls, watch: W) -> str:
        raise NotImplementedError(f"{cls.__name__} does not say how a watch is keyed")

    @classmethod
    def of(cls, watches: Mapping[str, W]) -> Self:
        """A new run's book (continued as new): the watches, without the versions only an activity of the
        previous run read (the new run's activity reads the whole book first)."""
        return cls(dict(watches), dict.fromkeys(watches, 1), {}, 1 if watches else 0)

    def watch(self, request: W) -> None:
        key = self.key_of(request)
        if not self.REGISTRATION_REFRESHES and self.watches.get(key) == request:
            return
        self.version += 1
        self.watches[key] = request
        self.added_at[key] = self.version
        self.removed_at.pop(key, None)

    def unwatch(self, key: str) -> None:
        if key not in self.watches:
            return
        self.version += 1
        del self.watches[key]
        self.added_at.pop(key, None)
        self.removed_at[key] = self.version
        if len(self.removed_at) > TOMBSTONES:
            oldest = next(iter(self.removed_at))  # removals are kept in their order
            self.forgotten_before = self.removed_at.pop(oldest) + 1

    def changes_since(self, since: int) -> BookChanges[W]:
        if since > self.version or since < self.forgotten_before or since <= 0:
            return BookChanges(self.version, dict(self.watches), [], full=True)
        added = {key: watch for key, watch in self.watches.items() if self.added_at.get(key, 0) > since}
        removed = [key for key, at in self.removed_at.items() if at > since]
        return BookChanges(self.version, added, removed)


def packed_book_changes(changes: BookChanges[W], kind: type[dict[str, W]]) -> BookChanges[W]:
    """`changes` as the `watches` query answers them: many added watches packed into one text. `kind`: the
    book's watches' type (`dict[str, <watch>]`), which packing needs at run time."""
    if len(changes.added) <= PACK_ABOVE:
        return changes
    return replace(changes, added={}, packed=pack(changes.added, kind))


def added_watches(changes: BookChanges[W], kind: type[dict[str, W]]) -> dict[str, W]:
    """The watches `changes` adds, packed or not (`kind` as in `packed_book_changes`)."""
    return unpack(changes.packed, kind) if changes.packed else dict(changes.added)


def _applied(known: Mapping[str, W], changes: BookChanges[W], added: Mapping[str, W]) -> dict[str, W]:
    if changes.full:
        return dict(added)
    removed = set(changes.removed)
    updated = {key: watch for key, watch in known.items() if key not in removed}
    updated.update(added)
    return updated


V = TypeVar("V")


@dataclass
class BookCopy(Generic[W, V]):
    """An observer activity's copy of its workflow's book: the watches as of the book's `version`, and the
    view last sent for each watch (kept while the watch is). `kind` as in `packed_book_changes`."""

    kind: type[dict[str, W]]
    watches: dict[str, W] = field(default_factory=dict)
    version: int = 0
    sent: dict[str, V] = field(default_factory=dict)

    def take(self, changes: BookChanges[W]) -> dict[str, W]:
        """Takes in an answer of the `watches` query; returns the watches it adds or registers again (none
        when the book is still at `version`)."""
        if changes.version == self.version:
            return {}
        added = added_watches(changes, self.kind)
        self.watches = _applied(self.watches, changes, added)
        self.version = changes.version
        self.sent = {key: view for key, view in self.sent.items() if key in self.watches}
        return added

    def carry_sent_from(self, previous: BookCopy[W, V]) -> None:
        """Takes the views another copy of the same observer's book (an earlier activity in this process:
        the run before a continue-as-new, or the attempt before a retry) delivered, for the watches both
        copies hold unchanged: their workflows hold those views, and sending each again would cost every
        watching workflow a workflow task at once (thousands after each continue-as-new of a busy
        observer), with the views that are news queued behind them."""
        for key, view in previous.sent.items():
            watch = self.watches.get(key)
            if watch is not None and previous.watches.get(key) == watch:
                self.sent.setdefault(key, view)


# A view's version as both observers send it: (observer epoch in ms, activity attempt, list tick or delivery
# round).
ViewVersion = tuple[int, int, int]


def is_newer_view(held: ViewVersion | None, incoming: ViewVersion) -> bool:
    """Whether a view of `incoming` version replaces the one held (versions compare in order)."""
    return held is None or tuple(incoming) > tuple(held)
