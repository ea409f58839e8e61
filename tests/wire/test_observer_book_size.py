"""The observers' books at the scale of issue 12 (10,000 running RayJobs on one cluster): what the `watches`
query answers and what a continue-as-new carries stay far under Temporal's 2 MB limit for one payload (plain
JSON they were ~3.5 MB: the observer's continue-as-new failed and it stopped), and round-trip exactly."""

from __future__ import annotations

from temporalio.api.common.v1 import Payload

from raypilot.converter import raypilot_data_converter
from wire.dashboard import DashboardTarget, JobInfoAnswer
from wire.kubernetes_observer import ObjectWatch, ObjectWatchBook
from wire.observer import JobWatch, WatchBook, WatchChanges, watch_key
from wire.packing import pack, unpack
from wire.watch_book import PACK_ABOVE, BookCopy, packed_book_changes

PAYLOAD_LIMIT = 2 * 1024 * 1024
TARGET = DashboardTarget("bench-4f2a9c", "shared-cluster-head-svc", "shared-cluster-head-svc.bench:8265")


def encoded(value: object) -> Payload:
    payload: Payload = raypilot_data_converter.payload_converter.to_payloads([value])[0]
    return payload


def packed_changes(changes: WatchChanges) -> WatchChanges:
    """`changes` as the observer's `watches` query answers them."""
    return packed_book_changes(changes, dict[str, JobWatch])


def job_copy() -> BookCopy[JobWatch, JobInfoAnswer]:
    """A fresh copy of a Ray job book, as the observer activity starts with."""
    return BookCopy(dict[str, JobWatch])


def job_book(size: int) -> WatchBook:
    book = WatchBook()
    for index in range(size):
        submission_id = f"p7-{index:05d}-x{index * 7919 % 99991:05d}"
        book.watch(JobWatch(TARGET, submission_id, f"rayjob/bench/p7-{index}"))
    return book


def test_ten_thousand_job_watches_fit_one_payload_only_packed() -> None:
    book = job_book(10_000)
    assert len(encoded(book).data) > PAYLOAD_LIMIT  # why packing exists
    packed = pack(book.watches, dict[str, JobWatch])
    assert len(encoded(packed).data) < PAYLOAD_LIMIT / 4
    assert unpack(packed, dict[str, JobWatch]) == book.watches


def test_the_whole_book_answers_packed_and_reads_back_whole() -> None:
    book = job_book(10_000)
    answer = packed_changes(book.changes_since(0))
    assert answer.added == {}
    assert answer.packed
    assert answer.full
    assert len(encoded(answer).data) < PAYLOAD_LIMIT / 4
    copy = job_copy()
    assert copy.take(answer) == book.watches
    assert copy.watches == book.watches


def test_small_answers_stay_plain() -> None:
    book = job_book(PACK_ABOVE)
    assert packed_changes(book.changes_since(0)).packed == ""
    book = job_book(PACK_ABOVE + 1)
    assert packed_changes(book.changes_since(0)).packed != ""


def test_a_packed_delta_applies_as_a_plain_one() -> None:
    book = job_book(PACK_ABOVE + 50)
    copy = job_copy()
    copy.take(packed_changes(book.changes_since(0)))
    first = next(iter(book.watches))
    book.unwatch(first)
    extra = job_book(2 * PACK_ABOVE + 100)
    for watch in list(extra.watches.values())[PACK_ABOVE + 50 :]:
        book.watch(watch)
    delta = book.changes_since(copy.version)
    assert delta.removed == [first]
    assert delta.packed == ""
    copy.take(packed_changes(delta))
    assert copy.watches == book.watches


def test_a_continued_run_starts_from_the_watches_alone() -> None:
    book = job_book(3)
    continued = WatchBook.of(unpack(pack(book.watches, dict[str, JobWatch]), dict[str, JobWatch]))
    assert continued.watches == book.watches
    # Its activity is new and reads the whole book first; a later registration is a change after it.
    assert continued.changes_since(0).full
    extra = JobWatch(TARGET, "late", "rayjob/bench/late")
    continued.watch(extra)
    assert continued.changes_since(1) == WatchChanges(2, {watch_key(TARGET, "late"): extra}, [])
    assert WatchBook.of({}).version == 0


def test_forgetting_the_oldest_removal_keeps_removal_order() -> None:
    book = job_book(4)
    keys = list(book.watches)
    for key in keys:
        book.unwatch(key)
    assert list(book.removed_at) == keys  # oldest first: the one forgotten first
    book.watch(JobWatch(TARGET, keys[0].split("/", 1)[1], "rayjob/bench/p7-0"))
    assert list(book.removed_at) == keys[1:]


def test_ten_thousand_object_watches_pack_and_read_back() -> None:
    book = ObjectWatchBook()
    for index in range(10_000):
        cluster = f"job-{index}-raycluster-x7k2p"
        book.watch(ObjectWatch("RayCluster", "bench", cluster, f"rayjob/bench/job-{index}"))
    answer = packed_book_changes(book.changes_since(0), dict[str, ObjectWatch])
    assert answer.packed
    assert len(encoded(answer).data) < PAYLOAD_LIMIT / 4
    copy: BookCopy[ObjectWatch, dict[str, object]] = BookCopy(dict[str, ObjectWatch])
    # The activity resets what it sent for every watch added (registered again: a fresh look), packed too.
    assert copy.take(answer) == book.watches
    assert copy.watches == book.watches
    continued = ObjectWatchBook.of(unpack(pack(book.watches, dict[str, ObjectWatch]), dict[str, ObjectWatch]))
    assert continued.watches == book.watches
