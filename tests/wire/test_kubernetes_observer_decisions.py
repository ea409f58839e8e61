"""The Kubernetes observer's pure decisions, as tables: which item belongs to which observed object, which
views a watch wants and which end it, who gets which view, and the book's changes (which view is newer:
test_observer_decisions, one rule for both observers)."""

from __future__ import annotations

from typing import Any

import pytest

from wire.kubernetes import Observation
from wire.kubernetes_observer import (
    ObjectWatch,
    ObjectWatchBook,
    ObservedKind,
    WatchGoal,
    cached_object_key,
    ends_cluster_wait,
    ends_watch,
    kube_observer_workflow_id,
    object_deliveries,
    wants_view,
)
from wire.watch_book import BookCopy

GONE: dict[str, Any] = {"exists": False}
STARTING: dict[str, Any] = {"exists": True, "state": None, "conditions": []}
READY = {"exists": True, "state": "ready", "conditions": [["HeadPodReady", "True", "HeadPodRunningAndReady"]]}
JOB_RUNNING = {"exists": True, "uid": "u", "deleting": False, "conditions": []}
JOB_COMPLETE = {"exists": True, "uid": "u", "deleting": False, "conditions": [["Complete", "True", "x"]]}
JOB_FAILED = {"exists": True, "uid": "u", "deleting": False, "conditions": [["Failed", "True", "x"]]}
JOB_SUSPENDED = {"exists": True, "uid": "u", "deleting": False, "conditions": [["Suspended", "True", "x"]]}
POD_RUNNING = {"exists": True, "name": "h", "phase": "Running", "containers": []}


def _watch(
    kind: ObservedKind, name: str, workflow: str = "rayjob/ns/a", until: WatchGoal = "change"
) -> ObjectWatch:
    return ObjectWatch(kind, "ns", name, workflow, until)


def test_the_observer_id_names_task_queue_and_namespace() -> None:
    assert kube_observer_workflow_id("raypilot", "team-a") == "raypilot-k8s-observer/raypilot/team-a"


@pytest.mark.parametrize(
    ("kind", "item", "expected"),
    [
        ("RayCluster", {"metadata": {"name": "rc"}}, "RayCluster/rc"),
        ("Job", {"metadata": {"name": "job"}}, "Job/job"),
        ("HeadPod", {"metadata": {"name": "rc-head-x", "labels": {"ray.io/cluster": "rc"}}}, "HeadPod/rc"),
        ("HeadPod", {"metadata": {"name": "stray", "labels": {}}}, None),
        ("Job", {"metadata": {}}, None),
    ],
)
def test_each_item_belongs_to_one_observed_object(
    kind: ObservedKind, item: dict[str, Any], expected: str | None
) -> None:
    assert cached_object_key(kind, item) == expected


@pytest.mark.parametrize(
    ("goal", "kind", "view", "wanted", "ends"),
    [
        ("ready", "RayCluster", STARTING, False, False),  # an intermediate state: no signal at all
        ("ready", "RayCluster", READY, True, True),
        ("ready", "RayCluster", GONE, True, True),
        ("finished", "Job", JOB_RUNNING, True, False),  # every change of the submitter goes out
        ("finished", "Job", JOB_SUSPENDED, True, False),
        ("finished", "Job", JOB_COMPLETE, True, True),
        ("finished", "Job", JOB_FAILED, True, True),
        ("finished", "Job", GONE, True, True),
        ("change", "HeadPod", POD_RUNNING, True, False),
        ("change", "HeadPod", GONE, True, False),  # a head Pod comes back: the watch lasts
    ],
)
def test_what_a_watch_wants_and_what_ends_it(
    goal: WatchGoal, kind: ObservedKind, view: dict[str, Any], wanted: bool, ends: bool
) -> None:
    assert wants_view(ObjectWatch(kind, "ns", "x", "wf", goal), view) is wanted
    assert ends_watch(goal, kind, view) is ends


@pytest.mark.parametrize(("view", "ends"), [(STARTING, False), (READY, True), (GONE, True)])
def test_the_initializing_wait_ends_on_a_ready_or_gone_cluster(view: dict[str, Any], ends: bool) -> None:
    assert ends_cluster_wait(view) is ends


def test_deliveries_fan_one_objects_change_out_to_every_watch_that_lacks_it() -> None:
    shared_a = _watch("HeadPod", "rc", "rayjob/ns/a")
    shared_b = _watch("HeadPod", "rc", "rayjob/ns/b")
    other = _watch("Job", "other", "rayjob/ns/c", "finished")
    not_looked = _watch("Job", "quiet", "rayjob/ns/d", "finished")
    waiting = _watch("RayCluster", "starting", "rayjob/ns/e", "ready")
    watches = {w.key: w for w in (shared_a, shared_b, other, not_looked, waiting)}
    observations = {
        "HeadPod/rc": Observation({"kind": "Pod"}, POD_RUNNING),
        "Job/other": Observation({"kind": "Job"}, JOB_RUNNING),
        "RayCluster/starting": Observation({"kind": "RayCluster"}, STARTING),
    }
    # b has this view already; `other` was sent it; `quiet` did not change; `starting` is not ready yet.
    sent = {shared_b.key: POD_RUNNING, other.key: JOB_RUNNING}
    found = object_deliveries(watches, observations, sent)
    assert [(d.workflow_id, d.observation.view) for d in found] == [("rayjob/ns/a", POD_RUNNING)]


def test_after_a_restart_every_looked_watch_gets_its_view_once() -> None:
    watches = {w.key: w for w in (_watch("Job", "j", "wf1", "finished"), _watch("HeadPod", "rc", "wf2"))}
    observations = {"Job/j": Observation(None, GONE), "HeadPod/rc": Observation({}, POD_RUNNING)}
    assert {d.workflow_id for d in object_deliveries(watches, observations, {})} == {"wf1", "wf2"}


def test_the_book_hands_out_only_what_changed_and_a_registration_again_counts() -> None:
    book = ObjectWatchBook()
    first, second = _watch("Job", "j", "wf1", "finished"), _watch("HeadPod", "rc", "wf2")
    book.watch(first)
    start = book.changes_since(0)
    assert start.full
    assert set(start.added) == {first.key}
    copy: BookCopy[ObjectWatch, dict[str, Any]] = BookCopy(dict[str, ObjectWatch])
    copy.take(start)
    book.watch(second)
    book.unwatch(first.key)
    changes = book.changes_since(start.version)
    assert not changes.full
    assert (set(changes.added), changes.removed) == ({second.key}, [first.key])
    copy.take(changes)
    assert set(copy.watches) == {second.key}
    # The same watch registered again (a fresh look asked for) shows up as added again.
    book.watch(second)
    assert set(book.changes_since(changes.version).added) == {second.key}
    # A reader from the future (a new observer run) reads the whole book.
    assert book.changes_since(book.version + 10).full
