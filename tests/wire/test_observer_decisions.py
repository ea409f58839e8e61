"""The observer's pure decisions (wire.observer): which workflow gets which view after a tick's lists, how
views of different attempts order (the Kubernetes observer's too), what the watch book tells a reader, and
a relist after a restart."""

from __future__ import annotations

import pytest

from wire.dashboard import DashboardTarget, JobInfoAnswer
from wire.observer import (
    Delivery,
    JobWatch,
    Listing,
    WatchBook,
    WatchChanges,
    dashboards_to_list,
    deliveries,
    finished_watches,
    is_replaced,
    next_epoch_ms,
    observer_workflow_id,
    watch_key,
)
from wire.watch_book import TOMBSTONES, BookCopy, is_newer_view

RUNNING = JobInfoAnswer("found", status="RUNNING", message="Job is currently running.")
SUCCEEDED = JobInfoAnswer("found", status="SUCCEEDED", message="Job finished successfully.")
PENDING = JobInfoAnswer("found", status="PENDING", message="Job has not started yet.")
NOT_FOUND = JobInfoAnswer("not_found")
DOWN = JobInfoAnswer("unavailable", error="GetJobInfo fail: ConnectError")
SHARED = DashboardTarget("team", "shared-head-svc")
OWN = DashboardTarget("team", "own-head-svc")
A = JobWatch(SHARED, "job-a", "rayjob/a")
B = JobWatch(SHARED, "job-b", "rayjob/b")
C = JobWatch(OWN, "job-a", "rayjob/c")  # the same submission id on another cluster: another job
WATCHES = {watch_key(w.target, w.submission_id): w for w in (A, B, C)}
KA, KB, KC = WATCHES


def job_copy() -> BookCopy[JobWatch, JobInfoAnswer]:
    """A fresh copy of the book, as the observer activity starts with."""
    return BookCopy(dict[str, JobWatch])


def test_keys_tell_clusters_apart() -> None:
    assert (KA, KB, KC) == ("shared-head-svc/job-a", "shared-head-svc/job-b", "own-head-svc/job-a")
    assert dashboards_to_list(WATCHES) == {"shared-head-svc": SHARED, "own-head-svc": OWN}


@pytest.mark.parametrize(
    ("listings", "sent", "expected"),
    [
        # First lists after a (re)start: nothing sent yet, every watch gets its own cluster's view.
        (
            {"shared-head-svc": Listing({"job-a": RUNNING, "other": RUNNING}), "own-head-svc": Listing({})},
            {},
            [
                ("rayjob/a", KA, "job-a", RUNNING),
                ("rayjob/b", KB, "job-b", NOT_FOUND),
                ("rayjob/c", KC, "job-a", NOT_FOUND),
            ],
        ),
        # Nothing changed since the last lists: nobody is told anything.
        (
            {"shared-head-svc": Listing({"job-a": RUNNING, "job-b": PENDING}), "own-head-svc": Listing({})},
            {KA: RUNNING, KB: PENDING, KC: NOT_FOUND},
            [],
        ),
        # One job changed: only its workflow is told.
        (
            {"shared-head-svc": Listing({"job-a": SUCCEEDED, "job-b": PENDING}), "own-head-svc": Listing({})},
            {KA: RUNNING, KB: PENDING, KC: NOT_FOUND},
            [("rayjob/a", KA, "job-a", SUCCEEDED)],
        ),
        # One dashboard did not answer: its jobs are unavailable (as one GET would say), the others' are not.
        (
            {"shared-head-svc": Listing(None, DOWN), "own-head-svc": Listing({"job-a": RUNNING})},
            {KA: RUNNING, KB: PENDING, KC: NOT_FOUND},
            [
                ("rayjob/a", KA, "job-a", DOWN),
                ("rayjob/b", KB, "job-b", DOWN),
                ("rayjob/c", KC, "job-a", RUNNING),
            ],
        ),
        # ... and is told once only while it stays down (same outcome, status and message).
        ({"shared-head-svc": Listing(None, DOWN)}, {KA: DOWN, KB: DOWN}, []),
        # A dashboard not listed this tick (watched since): its watches wait for the next tick.
        ({"shared-head-svc": Listing({"job-a": RUNNING, "job-b": PENDING})}, {KA: RUNNING, KB: PENDING}, []),
    ],
)
def test_deliveries_tell_each_workflow_only_about_its_own_changed_job(
    listings: dict[str, Listing],
    sent: dict[str, JobInfoAnswer],
    expected: list[tuple[str, str, str, JobInfoAnswer]],
) -> None:
    assert deliveries(WATCHES, listings, sent) == [Delivery(*row) for row in expected]


def test_a_watch_is_done_once_a_terminal_view_was_delivered() -> None:
    assert finished_watches({KA: SUCCEEDED, KB: RUNNING, KC: NOT_FOUND}) == [KA]


# The Ray job observer's and the Kubernetes observer's views order by this one rule.
@pytest.mark.parametrize(
    ("held", "incoming", "newer"),
    [
        (None, (1, 1, 1), True),
        ((1000, 1, 5), (1000, 1, 6), True),  # the next tick of the same attempt
        ((1000, 1, 6), (1000, 1, 6), False),  # the same view again (a retried signal)
        ((1000, 2, 1), (1000, 1, 900), False),  # a lost attempt still running: older whatever its tick
        ((1000, 1, 900), (1000, 2, 1), True),  # the retried attempt's first list
        ((1000, 3, 50), (2000, 1, 1), True),  # a later observer activity (epoch)
        ((2000, 1, 1), (1000, 3, 9), False),  # an earlier observer activity
    ],
)
def test_views_order_by_epoch_then_attempt_then_tick(
    held: tuple[int, int, int] | None, incoming: tuple[int, int, int], newer: bool
) -> None:
    assert is_newer_view(held, incoming) is newer


def test_the_book_gives_a_reader_only_what_changed_since_its_version() -> None:
    book = WatchBook()
    book.watch(A)
    book.watch(B)
    first = book.changes_since(0)
    assert first == WatchChanges(2, {KA: A, KB: B}, [], full=True)
    copy = job_copy()
    copy.take(first)

    book.watch(A)  # a repeated registration (a retried step, the hourly check) changes nothing
    assert book.changes_since(2) == WatchChanges(2)
    book.unwatch(KA)
    book.watch(C)
    changes = book.changes_since(2)
    assert changes == WatchChanges(4, {KC: C}, [KA])
    copy.take(changes)
    assert copy.watches == {KB: B, KC: C}


def test_the_activity_copy_takes_what_changed_and_forgets_the_views_of_removed_watches() -> None:
    book = WatchBook()
    book.watch(A)
    book.watch(B)
    copy = job_copy()
    assert copy.take(book.changes_since(copy.version)) == {KA: A, KB: B}
    assert (copy.watches, copy.version) == ({KA: A, KB: B}, 2)
    copy.sent.update({KA: RUNNING, KB: PENDING})

    # The book did not change: nothing added, the views sent are kept.
    assert copy.take(book.changes_since(copy.version)) == {}
    assert copy.sent == {KA: RUNNING, KB: PENDING}

    book.unwatch(KA)
    book.watch(C)
    assert copy.take(book.changes_since(copy.version)) == {KC: C}
    assert (copy.watches, copy.version) == ({KB: B, KC: C}, 4)
    assert copy.sent == {KB: PENDING}  # a removed watch's view goes with it


def test_a_job_watched_again_after_it_was_forgotten_is_added_again() -> None:
    book = WatchBook()
    book.watch(A)
    book.unwatch(KA)
    book.watch(A)
    assert book.changes_since(2) == WatchChanges(3, {KA: A}, [])
    copy = job_copy()
    copy.take(book.changes_since(2))
    assert copy.watches == {KA: A}


def test_a_reader_from_another_run_or_too_far_behind_reads_the_whole_book() -> None:
    book = WatchBook()
    for index in range(TOMBSTONES + 2):
        watch = JobWatch(SHARED, f"job-{index}", "rayjob/x")
        book.watch(watch)
        book.unwatch(watch_key(SHARED, watch.submission_id))
    book.watch(A)
    # Removals from the start were forgotten: a reader at version 1 gets everything instead of a delta.
    assert book.changes_since(1) == WatchChanges(book.version, {KA: A}, [], full=True)
    # A reader ahead of the book (it read a later run's book before a restart) also reads it whole.
    assert book.changes_since(book.version + 5).full
    # The full book replaces whatever the reader had.
    copy: BookCopy[JobWatch, JobInfoAnswer] = BookCopy(dict[str, JobWatch], {KB: B}, 1, {KB: RUNNING})
    copy.take(book.changes_since(0))
    assert copy.watches == {KA: A}
    assert copy.sent == {}


def test_a_next_activity_in_the_same_process_carries_over_only_what_its_book_still_holds_unchanged() -> None:
    """After a continue-as-new (or a retry) the new activity reads the whole book; the views the one before
    delivered for the same watches are not sent again, so its first round costs the RayJobs nothing."""
    before: BookCopy[JobWatch, JobInfoAnswer] = BookCopy(
        dict[str, JobWatch], {KA: A, KB: B, KC: C}, 7, {KA: RUNNING, KB: PENDING, KC: RUNNING}
    )
    book = WatchBook.of({KA: A, KB: JobWatch(SHARED, "job-b", "rayjob/b-again"), KC: C})
    book.unwatch(KC)
    after = job_copy()
    after.take(book.changes_since(0))
    after.carry_sent_from(before)
    # A: the same watch, its view carried; B: another workflow watches it now, which holds nothing yet;
    # C: no longer watched.
    assert after.sent == {KA: RUNNING}
    listing = Listing({"job-a": RUNNING, "job-b": PENDING})
    assert [
        delivery.workflow_id
        for delivery in deliveries(after.watches, {SHARED.head_service: listing}, after.sent)
    ] == ["rayjob/b-again"]


def test_one_observer_per_namespace_and_deployment() -> None:
    assert observer_workflow_id("raypilot", "team-a") == "raypilot-observer/raypilot/team-a"
    assert observer_workflow_id("raypilot", "team-b") != observer_workflow_id("raypilot", "team-a")
    # Another raypilot deployment (task queue) has its own observers, run by its own workers.
    assert observer_workflow_id("staging", "team-a") != observer_workflow_id("raypilot", "team-a")


@pytest.mark.parametrize(
    ("current_epoch", "mine", "replaced"),
    [
        (0, 1_000, False),  # an observer that does not say (an older workflow run): keep going
        (1_000, 1_000, False),
        (2_000, 1_000, True),  # a new worker asked for a new activity
        (1_000, 2_000, True),  # a continued run's activity of an earlier epoch is another one too
    ],
)
def test_is_replaced(current_epoch: int, mine: int, replaced: bool) -> None:
    assert is_replaced(current_epoch, mine) is replaced


@pytest.mark.parametrize(
    ("now_ms", "previous_ms", "epoch"),
    [(5_000, 0, 5_000), (5_000, 4_000, 5_000), (5_000, 5_000, 5_001), (5_000, 7_000, 7_001)],
)
def test_next_epoch_ms_orders_after_the_previous_activity(now_ms: int, previous_ms: int, epoch: int) -> None:
    assert next_epoch_ms(now_ms, previous_ms) == epoch
