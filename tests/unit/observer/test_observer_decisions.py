"""The observer's pure decisions (wire.observer): which workflow gets which view after a list, how views of
different attempts order, what the watch book tells a reader, and a relist after a restart."""

from __future__ import annotations

import pytest

from wire.dashboard import DashboardTarget, JobInfoAnswer
from wire.observer import (
    TOMBSTONES,
    Delivery,
    WatchBook,
    WatchChanges,
    apply_watch_changes,
    deliveries,
    finished_watches,
    is_newer_view,
    observer_workflow_id,
)

RUNNING = JobInfoAnswer("found", status="RUNNING", message="Job is currently running.")
SUCCEEDED = JobInfoAnswer("found", status="SUCCEEDED", message="Job finished successfully.")
PENDING = JobInfoAnswer("found", status="PENDING", message="Job has not started yet.")
NOT_FOUND = JobInfoAnswer("not_found")
DOWN = JobInfoAnswer("unavailable", error="GetJobInfo fail: ConnectError")
WATCHES = {"job-a": "rayjob/a", "job-b": "rayjob/b", "job-c": "rayjob/c"}


@pytest.mark.parametrize(
    ("listed", "sent", "expected"),
    [
        # First list after a (re)start: nothing sent yet, every watch gets its view, a missing job not_found.
        (
            {"job-a": RUNNING, "job-b": PENDING, "other": RUNNING},
            {},
            [
                ("rayjob/a", "job-a", RUNNING),
                ("rayjob/b", "job-b", PENDING),
                ("rayjob/c", "job-c", NOT_FOUND),
            ],
        ),
        # Nothing changed since the last list: nobody is told anything.
        ({"job-a": RUNNING, "job-b": PENDING}, {"job-a": RUNNING, "job-b": PENDING, "job-c": NOT_FOUND}, []),
        # One job changed: only its workflow is told.
        (
            {"job-a": SUCCEEDED, "job-b": PENDING},
            {"job-a": RUNNING, "job-b": PENDING, "job-c": NOT_FOUND},
            [("rayjob/a", "job-a", SUCCEEDED)],
        ),
        # The dashboard did not answer: every watched job is unavailable (as one GET would have said).
        (
            None,
            {"job-a": RUNNING, "job-b": PENDING, "job-c": NOT_FOUND},
            [("rayjob/a", "job-a", DOWN), ("rayjob/b", "job-b", DOWN), ("rayjob/c", "job-c", DOWN)],
        ),
        # ... and is told once only while it stays down (same outcome, status and message).
        (None, {"job-a": DOWN, "job-b": DOWN, "job-c": DOWN}, []),
    ],
)
def test_deliveries_tell_each_workflow_only_about_its_own_changed_job(
    listed: dict[str, JobInfoAnswer] | None,
    sent: dict[str, JobInfoAnswer],
    expected: list[tuple[str, str, JobInfoAnswer]],
) -> None:
    assert deliveries(WATCHES, listed, DOWN, sent) == [Delivery(*row) for row in expected]


def test_a_watch_is_done_once_a_terminal_view_was_delivered() -> None:
    assert finished_watches({"job-a": SUCCEEDED, "job-b": RUNNING, "job-c": NOT_FOUND}) == ["job-a"]


@pytest.mark.parametrize(
    ("held", "incoming", "newer"),
    [
        (None, (1, 1, 1), True),
        ((1000, 1, 5), (1000, 1, 6), True),  # the next tick of the same attempt
        ((1000, 1, 6), (1000, 1, 6), False),  # the same view again (a retried signal)
        ((1000, 2, 1), (1000, 1, 900), False),  # a lost attempt still running: older whatever its tick
        ((1000, 1, 900), (1000, 2, 1), True),  # the retried attempt's first list
        ((1000, 3, 50), (2000, 1, 1), True),  # a later observer run or activity (epoch)
    ],
)
def test_views_order_by_epoch_then_attempt_then_tick(
    held: tuple[int, int, int] | None, incoming: tuple[int, int, int], newer: bool
) -> None:
    assert is_newer_view(held, incoming) is newer


def test_the_book_gives_a_reader_only_what_changed_since_its_version() -> None:
    book = WatchBook()
    book.watch("job-a", "rayjob/a")
    book.watch("job-b", "rayjob/b")
    first = book.changes_since(0)
    assert first == WatchChanges(2, {"job-a": "rayjob/a", "job-b": "rayjob/b"}, [], full=True)
    known = apply_watch_changes({}, first)

    book.watch("job-a", "rayjob/a")  # a repeated registration (a retried step) changes nothing
    assert book.changes_since(2) == WatchChanges(2)
    book.unwatch("job-a")
    book.watch("job-c", "rayjob/c")
    changes = book.changes_since(2)
    assert changes == WatchChanges(4, {"job-c": "rayjob/c"}, ["job-a"])
    assert apply_watch_changes(known, changes) == {"job-b": "rayjob/b", "job-c": "rayjob/c"}


def test_a_job_watched_again_after_it_was_forgotten_is_added_again() -> None:
    book = WatchBook()
    book.watch("job-a", "rayjob/a")
    book.unwatch("job-a")
    book.watch("job-a", "rayjob/a")
    assert book.changes_since(2) == WatchChanges(3, {"job-a": "rayjob/a"}, [])
    assert apply_watch_changes({}, book.changes_since(2)) == {"job-a": "rayjob/a"}


def test_a_reader_from_another_run_or_too_far_behind_reads_the_whole_book() -> None:
    book = WatchBook()
    for index in range(TOMBSTONES + 2):
        book.watch(f"job-{index}", "rayjob/x")
        book.unwatch(f"job-{index}")
    book.watch("job-last", "rayjob/last")
    # Removals from the start were forgotten: a reader at version 1 gets everything instead of a delta.
    assert book.changes_since(1) == WatchChanges(book.version, {"job-last": "rayjob/last"}, [], full=True)
    # A reader ahead of the book (it read a later run's book before a restart) also reads it whole.
    assert book.changes_since(book.version + 5).full
    # The full book replaces whatever the reader had.
    assert apply_watch_changes({"job-0": "rayjob/x"}, book.changes_since(0)) == {"job-last": "rayjob/last"}


def test_one_observer_per_dashboard() -> None:
    target = DashboardTarget("team-a", "shared-head-svc")
    assert observer_workflow_id("raypilot", target) == "raypilot-observer/raypilot/team-a/shared-head-svc"
    other_namespace = DashboardTarget("team-b", "shared-head-svc")
    assert observer_workflow_id("raypilot", other_namespace) != observer_workflow_id("raypilot", target)
    # Another raypilot deployment (task queue) has its own observers, run by its own workers.
    assert observer_workflow_id("staging", target) != observer_workflow_id("raypilot", target)
