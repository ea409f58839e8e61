"""The cluster observer of Ray jobs: what RayJob workflows, the observer workflow and its activity tell each
other, and the pure decisions of the observer (who gets which view, which view is newer, what a watch book
says changed). Pure: workflows and activities both import this module.

One observer per Ray dashboard (namespace, head Service) lists `GET /api/jobs/` once per tick and sends each
watching RayJob workflow the view of its Ray job when that view changed (signal `observed`). A RayJob
workflow registers itself (signal `watch`, by signal-with-start: the observer starts on first need) with the
submission id it waits for; the observer forgets a watch once it has delivered a terminal view, when the
observer is told so (`unwatch`) or when the workflow is gone. Registration rather than a mark in the Ray job's
metadata: it works the same for every submission mode without changing KubeRay's submitter command.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from wire.dashboard import DashboardTarget, JobInfoAnswer

OBSERVER_WORKFLOW: Final = "RayJobObserverWorkflow"
WATCH_SIGNAL: Final = "watch"
UNWATCH_SIGNAL: Final = "unwatch"
WATCHES_QUERY: Final = "watches"
# The signal a RayJob workflow receives with the newest view of its Ray job.
OBSERVED_SIGNAL: Final = "observed"
OBSERVER_ID_PREFIX: Final = "raypilot-observer"


def observer_workflow_id(task_queue: str, target: DashboardTarget) -> str:
    """The fixed id of the observer of one dashboard: one per (namespace, head Service) and raypilot
    deployment (its task queue: the workers that run the observer are those that run the RayJobs)."""
    return f"{OBSERVER_ID_PREFIX}/{task_queue}/{target.namespace}/{target.head_service}"


@dataclass(frozen=True)
class JobWatch:
    """A RayJob workflow waits for the Ray job `submission_id` on `target`'s dashboard."""

    target: DashboardTarget
    submission_id: str
    workflow_id: str


@dataclass(frozen=True)
class ObservedJob:
    """What the observer saw of one Ray job. `version` orders views: (observer epoch in ms, activity attempt,
    list tick); a workflow keeps only a view newer than the one it has (a lost attempt still running, a
    retried signal and a relist after a restart send older or equal versions)."""

    submission_id: str
    answer: JobInfoAnswer
    version: tuple[int, int, int]


@dataclass(frozen=True)
class ObserveJobs:
    """The observer activity's input: the dashboard, the observer workflow to read watches from, and the
    epoch of that workflow's run (first part of every version it sends)."""

    target: DashboardTarget
    observer_id: str
    epoch_ms: int
    tick_seconds: float = 1.0


@dataclass(frozen=True)
class WatchChanges:
    """The answer of the `watches` query: the watches added and removed after `since` (all of them when
    `full`), and the book's version now."""

    version: int
    added: dict[str, str] = field(default_factory=dict)  # submission id -> workflow id
    removed: list[str] = field(default_factory=list)
    full: bool = False


@dataclass
class WatchBook:
    """The observer workflow's watches, versioned so that its activity reads only what changed. Removals are
    remembered up to `TOMBSTONES` back; a reader older than that gets the whole book."""

    watches: dict[str, str] = field(default_factory=dict)
    added_at: dict[str, int] = field(default_factory=dict)
    removed_at: dict[str, int] = field(default_factory=dict)
    version: int = 0
    # Removals older than this version were forgotten: a reader behind it reads the whole book.
    forgotten_before: int = 0

    def watch(self, submission_id: str, workflow_id: str) -> None:
        if self.watches.get(submission_id) == workflow_id:
            return
        self.version += 1
        self.watches[submission_id] = workflow_id
        self.added_at[submission_id] = self.version
        self.removed_at.pop(submission_id, None)

    def unwatch(self, submission_id: str) -> None:
        if submission_id not in self.watches:
            return
        self.version += 1
        del self.watches[submission_id]
        self.added_at.pop(submission_id, None)
        self.removed_at[submission_id] = self.version
        if len(self.removed_at) > TOMBSTONES:
            oldest = min(self.removed_at, key=self.removed_at.__getitem__)
            self.forgotten_before = self.removed_at.pop(oldest) + 1

    def changes_since(self, since: int) -> WatchChanges:
        if since > self.version or since < self.forgotten_before or since <= 0:
            return WatchChanges(self.version, dict(self.watches), [], full=True)
        added = {sid: wid for sid, wid in self.watches.items() if self.added_at.get(sid, 0) > since}
        removed = [sid for sid, at in self.removed_at.items() if at > since]
        return WatchChanges(self.version, added, removed)


TOMBSTONES: Final = 10_000


def apply_watch_changes(known: Mapping[str, str], changes: WatchChanges) -> dict[str, str]:
    """The activity's copy of the watches after reading `changes`."""
    if changes.full:
        return dict(changes.added)
    updated = {sid: wid for sid, wid in known.items() if sid not in changes.removed}
    updated.update(changes.added)
    return updated


@dataclass(frozen=True)
class Delivery:
    workflow_id: str
    submission_id: str
    answer: JobInfoAnswer


def deliveries(
    watches: Mapping[str, str],
    listed: Mapping[str, JobInfoAnswer] | None,
    unavailable: JobInfoAnswer,
    sent: Mapping[str, JobInfoAnswer],
) -> list[Delivery]:
    """Which workflow gets which view after one list: every watched job whose view differs from the one last
    sent to it (a job missing from the list is `not_found`; when the list failed, every watched job is
    `unavailable` as a single GET would have said). After a restart `sent` is empty: every watch gets its
    current view once."""
    found: list[Delivery] = []
    for submission_id, workflow_id in watches.items():
        answer = unavailable if listed is None else listed.get(submission_id, NOT_FOUND)
        previous = sent.get(submission_id)
        if previous is None or previous.key() != answer.key():
            found.append(Delivery(workflow_id, submission_id, answer))
    return found


NOT_FOUND: Final = JobInfoAnswer("not_found")


def finished_watches(sent: Mapping[str, JobInfoAnswer]) -> list[str]:
    """Watches done once delivered: the job is terminal, nothing the workflow waits for changes after."""
    return [submission_id for submission_id, answer in sent.items() if answer.terminal]


def is_newer_view(held: tuple[int, int, int] | None, incoming: tuple[int, int, int]) -> bool:
    """Whether a view of `incoming` version replaces the one held (versions compare in order)."""
    return held is None or tuple(incoming) > tuple(held)
