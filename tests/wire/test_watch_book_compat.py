"""The observers' books became one generic book (wire/watch_book.py). A book is workflow state: an observer
run continued as new by older code hands it to the new run as its `book` argument, and the observer activity
of one release may read the `watches` answer of a workflow task run by another. So the JSON below, written
by the `WatchBook` and `ObjectWatchBook` (and their query answers) from before the merge, must decode into
the new classes with every watch typed, re-encode to the same bytes (but for the fields added since, with
their defaults), and behave as a book."""

from __future__ import annotations

from typing import Any

from temporalio.api.common.v1 import Payload

from raypilot.converter import raypilot_data_converter
from wire.dashboard import DashboardTarget
from wire.kubernetes_observer import ObjectWatch, ObjectWatchBook, ObjectWatchChanges
from wire.observer import JobWatch, WatchBook, WatchChanges
from wire.watch_book import BookCopy

TARGET = (
    '{"namespace":"ns","head_service":"head-svc","dashboard_url":"head-svc.ns:8265","dashboard_port":8265,'
    '"port_name":"dashboard","auth_secret":null}'
)
# The target as this code encodes it: DashboardTarget.auth_secret_key came later, with the old key as default.
TARGET_NOW = TARGET.removesuffix("}") + ',"auth_secret_key":"auth_token"}'
WATCH_A = f'{{"target":{TARGET},"submission_id":"a","workflow_id":"rayjob/ns/a"}}'
WATCH_C = f'{{"target":{TARGET},"submission_id":"c","workflow_id":"rayjob/ns/c"}}'
# Three registrations, then "b" unwatched.
JOB_BOOK = (
    f'{{"watches":{{"head-svc/a":{WATCH_A},"head-svc/c":{WATCH_C}}},'
    '"added_at":{"head-svc/a":1,"head-svc/c":3},"removed_at":{"head-svc/b":4},"version":4,"forgotten_before":0}'
)
# That book's `watches` answer since version 2.
JOB_CHANGES = (
    f'{{"version":4,"added":{{"head-svc/c":{WATCH_C}}},"removed":["head-svc/b"],"full":false,'
    '"epoch_ms":0,"packed":""}'
)

CLUSTER = (
    '{"kind":"RayCluster","namespace":"ns","name":"c1","workflow_id":"rayjob/ns/a","until":"ready",'
    '"last_view":null}'
)
HEAD_POD = (
    '{"kind":"HeadPod","namespace":"ns","name":"c1","workflow_id":"rayjob/ns/a","until":"change",'
    '"last_view":{"exists":true,"phase":"Running"}}'
)
# A RayCluster, a head Pod and a Job watched, then the Job unwatched.
OBJECT_BOOK = (
    f'{{"watches":{{"RayCluster/c1/rayjob/ns/a":{CLUSTER},"HeadPod/c1/rayjob/ns/a":{HEAD_POD}}},'
    '"added_at":{"RayCluster/c1/rayjob/ns/a":1,"HeadPod/c1/rayjob/ns/a":2},'
    '"removed_at":{"Job/j1/rayjob/ns/a":4},"version":4,"forgotten_before":0}'
)
# That book's `watches` answer since version 1.
OBJECT_CHANGES = (
    f'{{"version":4,"added":{{"HeadPod/c1/rayjob/ns/a":{HEAD_POD}}},"removed":["Job/j1/rayjob/ns/a"],'
    '"full":false,"epoch_ms":0,"packed":""}'
)


def decoded(text: str, kind: Any) -> Any:
    payload = Payload(metadata={"encoding": b"json/plain"}, data=text.encode())
    return raypilot_data_converter.payload_converter.from_payloads([payload], [kind])[0]


def encoded(value: object) -> str:
    payload: Payload = raypilot_data_converter.payload_converter.to_payloads([value])[0]
    return payload.data.decode()


def test_a_ray_job_book_of_older_code_decodes_as_the_observer_receives_it() -> None:
    book = decoded(JOB_BOOK, WatchBook | None)  # the workflow's `book` argument
    target = DashboardTarget("ns", "head-svc", "head-svc.ns:8265")
    a, c = JobWatch(target, "a", "rayjob/ns/a"), JobWatch(target, "c", "rayjob/ns/c")
    assert book == WatchBook(
        {"head-svc/a": a, "head-svc/c": c}, {"head-svc/a": 1, "head-svc/c": 3}, {"head-svc/b": 4}, 4
    )
    assert encoded(book) == JOB_BOOK.replace(TARGET, TARGET_NOW)
    # It goes on as a book: a repeated registration is ignored, a removal is remembered in order.
    book.watch(a)
    book.unwatch("head-svc/a")
    assert book.changes_since(2) == WatchChanges(5, {"head-svc/c": c}, ["head-svc/b", "head-svc/a"])


def test_a_ray_job_watches_answer_of_older_code_decodes_for_the_activity() -> None:
    changes = decoded(JOB_CHANGES, WatchChanges)
    assert isinstance(changes.added["head-svc/c"], JobWatch)
    assert encoded(changes) == JOB_CHANGES.replace(TARGET, TARGET_NOW)
    book = decoded(JOB_BOOK, WatchBook)
    copy: BookCopy[JobWatch, Any] = BookCopy(dict[str, JobWatch], book.watches, 2)
    copy.take(changes)
    assert sorted(copy.watches) == ["head-svc/a", "head-svc/c"]


def test_a_kubernetes_book_of_older_code_decodes_as_the_observer_receives_it() -> None:
    book = decoded(OBJECT_BOOK, ObjectWatchBook | None)
    assert all(isinstance(watch, ObjectWatch) for watch in book.watches.values())
    head_pod = book.watches["HeadPod/c1/rayjob/ns/a"]
    assert head_pod == ObjectWatch(
        "HeadPod", "ns", "c1", "rayjob/ns/a", "change", {"exists": True, "phase": "Running"}
    )
    assert (book.added_at, book.removed_at, book.version, book.forgotten_before) == (
        {"RayCluster/c1/rayjob/ns/a": 1, "HeadPod/c1/rayjob/ns/a": 2},
        {"Job/j1/rayjob/ns/a": 4},
        4,
        0,
    )
    assert encoded(book) == OBJECT_BOOK
    # It goes on as a Kubernetes book: registering the same watch again asks for a fresh look.
    book.watch(head_pod)
    assert book.changes_since(4) == ObjectWatchChanges(5, {"HeadPod/c1/rayjob/ns/a": head_pod}, [])


def test_a_kubernetes_watches_answer_of_older_code_decodes_for_the_activity() -> None:
    changes = decoded(OBJECT_CHANGES, ObjectWatchChanges)
    assert isinstance(changes.added["HeadPod/c1/rayjob/ns/a"], ObjectWatch)
    assert encoded(changes) == OBJECT_CHANGES
    book = decoded(OBJECT_BOOK, ObjectWatchBook)
    copy: BookCopy[ObjectWatch, Any] = BookCopy(dict[str, ObjectWatch], book.watches, 1)
    copy.take(changes)
    assert sorted(copy.watches) == ["HeadPod/c1/rayjob/ns/a", "RayCluster/c1/rayjob/ns/a"]
