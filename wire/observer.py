"""The cluster observer of Ray jobs: what RayJob workflows, the observer workflow and its activity tell each
other, and the pure decisions of the observer (which shard watches a cluster, who gets which view, when a
watch is done, whether a view replaces what a RayJob holds). Pure: workflows and activities both import
this module.

One observer per Kubernetes namespace (and raypilot task queue) lists `GET /api/jobs/` of every watched Ray
dashboard of the namespace once per tick and sends each watching RayJob workflow the view of its Ray job
when that view changed (signal `observed`): one activity slot per namespace, one list per cluster per tick.
A RayJob workflow registers itself (signal `watch`, by signal-with-start: the observer starts on first
need) with the dashboard and submission id it waits for; the observer forgets a watch once it has delivered
a terminal view, when it is told so (`unwatch`) or when the workflow is gone. Registration rather than a
mark in the Ray job's metadata: it works the same for every submission mode without changing KubeRay's
submitter command.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import ClassVar, Final

from wire.dashboard import DashboardTarget, JobInfoAnswer
from wire.watch_book import BookChanges, VersionedBook, ViewVersion

OBSERVER_WORKFLOW: Final = "RayJobObserverWorkflow"
WATCH_SIGNAL: Final = "watch"
UNWATCH_SIGNAL: Final = "unwatch"
# The watches one round of the observer activity found done, in one signal (a signal per watch was an event
# and a workflow task of the observer per RayJob): what the activity sends. `unwatch` (one key) stays for
# the signals an earlier activity sent.
UNWATCH_KEYS_SIGNAL: Final = "unwatch-keys"
WATCHES_QUERY: Final = "watches"
# The signal a RayJob workflow receives with the newest view of its Ray job.
OBSERVED_SIGNAL: Final = "observed"
# A worker of the task queue started (e.g. after one was killed): the observer restarts its activity now, as
# a lost attempt would be noticed only when its heartbeat times out (minutes).
WORKER_STARTED_SIGNAL: Final = "worker-started"
OBSERVER_ID_PREFIX: Final = "raypilot-observer"

# Both observers' activities (the Ray job observer's, the Kubernetes observer's) heartbeat every
# `OBSERVER_HEARTBEAT_EVERY`, and the server retries an attempt, on another worker if its own is gone, once
# `OBSERVER_LOST_AFTER` passed without one: a killed worker's observers answer again within ~25 s from the
# other workers (P10), with no worker starting. Three beats per timeout: a beat or two late under load does
# not restart a live observer. Each beat that reaches the server is a billable action (P4b).
OBSERVER_HEARTBEAT_EVERY: Final = timedelta(seconds=6)
OBSERVER_LOST_AFTER: Final = timedelta(seconds=20)


# Observers per namespace (RAYPILOT_OBSERVER_SHARDS): registrations of many clusters at once are spread over
# this many workflows instead of queueing on one workflow's signal rate.
OBSERVER_SHARDS_ENV: Final = "RAYPILOT_OBSERVER_SHARDS"
DEFAULT_OBSERVER_SHARDS: Final = 4
MAX_OBSERVER_SHARDS: Final = 256


def observer_workflow_id(task_queue: str, namespace: str, shard: int = 0) -> str:
    """The fixed id of one observer of a namespace's dashboards, per raypilot deployment (its task queue:
    the workers that run the observer are those that run the RayJobs):
    `raypilot-observer/<task queue>/<namespace>` for shard 0 (the id before sharding, so its observers carry
    on), `raypilot-observer/<task queue>/<namespace>/<shard>` for the others."""
    base = f"{OBSERVER_ID_PREFIX}/{task_queue}/{namespace}"
    return base if shard == 0 else f"{base}/{shard}"


def observer_shard(head_service: str, shards: int) -> int:
    """Which of a namespace's `shards` observers watches the cluster of `head_service`: a stable hash (the
    same on every worker and every run, unlike Python's `hash`), so a cluster belongs to exactly one
    observer and is listed once per tick."""
    if shards <= 1:
        return 0
    return zlib.crc32(head_service.encode()) % shards


def observer_shards_from_env(env: Mapping[str, str]) -> int:
    """RAYPILOT_OBSERVER_SHARDS: a whole number from 1 to 256 (default 4). Every worker of a task queue must
    say the same: a worker with another number registers a cluster's jobs with another observer, and the
    cluster is then listed by two (correct, one list more per tick)."""
    text = env.get(OBSERVER_SHARDS_ENV, "").strip()
    if not text:
        return DEFAULT_OBSERVER_SHARDS
    try:
        shards = int(text)
    except ValueError:
        shards = 0
    if not 1 <= shards <= MAX_OBSERVER_SHARDS:
        raise ValueError(
            f"{OBSERVER_SHARDS_ENV}={text!r}: want a whole number from 1 to {MAX_OBSERVER_SHARDS}"
        )
    return shards


def watch_key(target: DashboardTarget, submission_id: str) -> str:
    """A watch's key in the book: submission ids are unique per dashboard, not per namespace."""
    return f"{target.head_service}/{submission_id}"


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
    version: ViewVersion


@dataclass(frozen=True)
class ObserveJobs:
    """The observer activity's input: the namespace, the observer workflow to read watches from, and the
    epoch of that activity's start (first part of every version it sends)."""

    namespace: str
    observer_id: str
    epoch_ms: int
    tick_seconds: float = 1.0


# The `watches` query's answer (the watches added and removed since the activity's last look).
WatchChanges = BookChanges[JobWatch]


@dataclass
class WatchBook(VersionedBook[JobWatch]):
    """The observer workflow's watches, by `watch_key`. A repeated identical registration changes nothing:
    a RayJob registers again after a continue-as-new or a retried activity, and the job's view has not
    changed for that."""

    # Redeclared with the watch type so that a book passed on by continue-as-new decodes into `JobWatch`es.
    watches: dict[str, JobWatch] = field(default_factory=dict)

    REGISTRATION_REFRESHES: ClassVar[bool] = False

    @classmethod
    def key_of(cls, watch: JobWatch) -> str:
        return watch_key(watch.target, watch.submission_id)


def dashboards_to_list(watches: Mapping[str, JobWatch]) -> dict[str, DashboardTarget]:
    """One list per watched dashboard per tick, by head Service (the first watch's target speaks for it)."""
    targets: dict[str, DashboardTarget] = {}
    for watch in watches.values():
        targets.setdefault(watch.target.head_service, watch.target)
    return targets


@dataclass(frozen=True)
class Listing:
    """One dashboard's `GET /api/jobs/` by submission id; `jobs` None when it did not answer (`unavailable`
    says why)."""

    jobs: Mapping[str, JobInfoAnswer] | None
    unavailable: JobInfoAnswer = field(default_factory=lambda: JobInfoAnswer("unavailable"))


@dataclass(frozen=True)
class Delivery:
    workflow_id: str
    key: str
    submission_id: str
    answer: JobInfoAnswer


def deliveries(
    watches: Mapping[str, JobWatch], listings: Mapping[str, Listing], sent: Mapping[str, JobInfoAnswer]
) -> list[Delivery]:
    """Which workflow gets which view after one tick's lists (by head Service): every watched job whose view
    differs from the one last sent to it (a job missing from its dashboard's list is `not_found`; when the
    list failed, every job of that dashboard is `unavailable` as a single GET would have said). After a
    restart `sent` is empty: every watch gets its current view once. A dashboard not listed this tick (a
    watch newer than the tick's lists) gets nothing yet."""
    found: list[Delivery] = []
    for key, watch in watches.items():
        listing = listings.get(watch.target.head_service)
        if listing is None:
            continue
        jobs = listing.jobs
        answer = listing.unavailable if jobs is None else jobs.get(watch.submission_id, NOT_FOUND)
        previous = sent.get(key)
        if previous is None or previous.key() != answer.key():
            found.append(Delivery(watch.workflow_id, key, watch.submission_id, answer))
    return found


NOT_FOUND: Final = JobInfoAnswer("not_found")


def finished_watches(sent: Mapping[str, JobInfoAnswer]) -> list[str]:
    """Watches (keys) done once delivered: the job is terminal, nothing the workflow waits for changes
    after."""
    return [key for key, answer in sent.items() if answer.terminal]


def is_replaced(current_epoch_ms: int, epoch_ms: int) -> bool:
    """Whether the observer activity of `epoch_ms` was replaced by another (it then stops), given the epoch
    of the observer workflow's current activity (its `watches` answer; 0: an older run that does not say)."""
    return current_epoch_ms not in (0, epoch_ms)


def next_epoch_ms(now_ms: int, previous_ms: int) -> int:
    """The epoch of a new observer activity: now, but always after the previous one's (two activities
    started within one workflow task would otherwise share it, and their views could not be ordered)."""
    return max(now_ms, previous_ms + 1)


# How far a found Ray job has got: its status only ever moves forward (PENDING -> RUNNING -> terminal).
_PROGRESS: Final = {"PENDING": 1, "RUNNING": 2, "STOPPED": 3, "SUCCEEDED": 3, "FAILED": 3}


def _progress(answer: JobInfoAnswer) -> int | None:
    return _PROGRESS.get(answer.status, 0) if answer.outcome == "found" else None


def takes_observed_view(answer: JobInfoAnswer, view: JobInfoAnswer, *, newer: bool) -> bool:
    """Whether the observer's `view` of the job replaces the `answer` a RayJob holds, which may come from a
    direct look (`get_job_info`) fresher than the views held. `newer`: the view's version is newer than every
    view the answer already accounts for (delivered after the answer was taken).

    A newer view is news unless it moves a found job back (a Ray job's status never does: such a view was
    listed before the answer was looked at). A view that is not newer (held while a direct look answered)
    counts only when it moves the job forward: a later status, or the job found where the look failed or
    did not find it. So a view listed before the job was submitted (not_found) or while it ran never
    overrides a look that saw it running or ended."""
    if view.key() == answer.key():
        return False
    held, seen = _progress(answer), _progress(view)
    if newer:
        return not (held is not None and seen is not None and seen < held)
    return seen is not None and (held is None or seen > held)
