"""Revision history and undo (issue #18): recording, settling, which revision an undo goes back to, and how
(in place, same cluster, or a new upgrade), retry, and the Serve config held back while the desired spec is
an aborted one, as tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.meta import ConditionStatus
from models.rayservice import RayServiceStatus, RayServiceStatuses
from workflows.decisions.rayservice.conditions import set_condition
from workflows.decisions.rayservice.upgrade.aborted_spec import serve_config_while_aborted
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
from workflows.decisions.rayservice.upgrade.retry import retried_controls, retried_revisions, retry_rejection
from workflows.decisions.rayservice.upgrade.revisions import (
    Revision,
    RevisionsSeen,
    record_revision,
    revision_rows,
    served_config,
    settle_revisions,
)
from workflows.decisions.rayservice.upgrade.undo import (
    UndoKind,
    UndoRejected,
    UndoWorld,
    undo_plan,
    undo_target,
    with_reinstated_cluster,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def manifest(version: str) -> dict[str, Any]:
    return {"metadata": {"name": "svc"}, "spec": {"version": version}}


def revision(
    number: int, outcome: str = "Promoted", cluster: str | None = None, cluster_hash: str = ""
) -> Revision:
    return Revision(
        number=number,
        generation=number,
        spec_hash=f"s{number}",
        cluster_hash=cluster_hash or f"h{number}",
        manifest=manifest(f"v{number}"),
        created=T0,
        outcome=outcome,
        cluster=f"c{number}" if cluster is None else cluster,
    )


def test_a_generation_is_recorded_once() -> None:
    history = record_revision([], manifest("v1"), 1, "h1", T0)
    assert record_revision(history, manifest("v1"), 1, "h1", T0 + timedelta(1)) == history
    [first] = history
    assert (first.number, first.generation, first.outcome, first.created) == (1, 1, "Progressing", T0)


def test_a_newer_spec_supersedes_an_unsettled_revision_and_numbers_go_on() -> None:
    history = record_revision([revision(4, "Progressing")], manifest("v5"), 5, "h5", T0, undo_of=2)
    assert [(r.number, r.outcome, r.undo_of) for r in history] == [
        (4, "Superseded", None),
        (5, "Progressing", 2),
    ]
    assert history[0].settled == T0


@pytest.mark.parametrize(("limit", "kept"), [(10, [1, 2, 3, 4]), (2, [3, 4]), (1, [4]), (0, [4])])
def test_only_the_newest_limit_revisions_are_kept(limit: int, kept: list[int]) -> None:
    history = [revision(1), revision(2), revision(3)]
    assert [r.number for r in record_revision(history, manifest("v4"), 4, "h4", T0, limit)] == kept


def seen(**changes: Any) -> RevisionsSeen:
    values: dict[str, Any] = {
        "active_cluster": "c1",
        "active_cluster_hash": "h1",
        "upgrading": False,
        "aborted_goal_hash": None,
        "now": T0,
        "active_serve_config": "cfg",
    }
    return RevisionsSeen(**{**values, **changes})


@pytest.mark.parametrize(
    ("what", "changes", "outcome", "cluster"),
    [
        ("its spec serves, no upgrade", {}, "Promoted", "c1"),
        ("an upgrade still runs", {"upgrading": True}, "Progressing", ""),
        ("another spec serves (strategy None left it)", {"active_cluster_hash": "h0"}, "Progressing", ""),
        ("no cluster yet", {"active_cluster": "", "active_cluster_hash": ""}, "Progressing", ""),
        ("aborted by the control", {"active_cluster_hash": "h0", "aborted_goal_hash": "h1"}, "Aborted", ""),
        (
            "rolled back by raypilot",
            {
                "active_cluster_hash": "h0",
                "aborted_goal_hash": "h1",
                "rollback_reason": "NewClusterUnhealthy",
            },
            "RolledBack",
            "",
        ),
        ("another goal aborted", {"active_cluster_hash": "h0", "aborted_goal_hash": "h9"}, "Progressing", ""),
    ],
)
def test_settling_the_newest_revision(what: str, changes: dict[str, Any], outcome: str, cluster: str) -> None:
    [settled] = settle_revisions([revision(1, "Progressing", cluster="", cluster_hash="h1")], seen(**changes))
    assert (settled.outcome, settled.cluster) == (outcome, cluster), what
    if outcome == "Promoted":
        assert settled.serve_config == "cfg"


def test_a_settled_revision_stays_as_it_is() -> None:
    history = [revision(1, "Aborted", cluster="", cluster_hash="h1")]
    assert settle_revisions(history, seen()) == history


def test_rows_leave_the_manifests_out_unless_asked() -> None:
    history = [revision(1), Revision(2, 2, "s2", "h2", manifest("v1"), T0, undo_of=1)]
    rows = revision_rows(history)
    assert rows[0] == {
        "revision": 1,
        "generation": 1,
        "specHash": "s1",
        "created": "2026-01-01T00:00:00Z",
        "outcome": "Promoted",
        "rayClusterName": "c1",
    }
    assert rows[1]["undoOf"] == 1
    assert "manifest" not in rows[1]
    assert revision_rows(history, manifests=True)[1]["manifest"] == manifest("v1")


def test_the_served_config_is_the_newest_promoted_on_that_cluster() -> None:
    older = Revision(1, 1, "s1", "h1", {}, T0, "Promoted", cluster="c1", serve_config="a")
    newer = Revision(2, 2, "s2", "h1", {}, T0, "Promoted", cluster="c1", serve_config="b")
    assert served_config([older, newer, revision(3)], "c1") == "b"
    assert served_config([older], "c9") == ""


HISTORY = [revision(1), revision(2, "Aborted"), revision(3), revision(4, "Progressing")]


@pytest.mark.parametrize(
    ("to_revision", "expected"),
    [
        (None, 3),  # the newest earlier promoted revision
        (2, 2),  # any kept revision, even an aborted one
        (1, 1),
    ],
)
def test_undo_target(to_revision: int | None, expected: int) -> None:
    assert undo_target(HISTORY, to_revision, "ns/svc").number == expected


@pytest.mark.parametrize(
    ("history", "to_revision", "message"),
    [
        ([], None, "undo rejected: RayService ns/svc has no revision history yet"),
        ([revision(1)], None, "has no earlier promoted revision to go back to (revisions kept: 1)"),
        (HISTORY, 7, "revision 7 is not in the history of RayService ns/svc (revisions kept: 1, 2, 3, 4)"),
        (HISTORY, 4, "revision 4 is the current revision of RayService ns/svc"),
    ],
)
def test_undo_target_rejections(history: list[Revision], to_revision: int | None, message: str) -> None:
    with pytest.raises(UndoRejected, match=message.replace("(", r"\(").replace(")", r"\)")):
        undo_target(history, to_revision, "ns/svc")


@pytest.mark.parametrize(
    ("what", "target", "world", "kind", "cluster"),
    [
        ("inside the window", revision(1), UndoWorld("c2", ["c1", "c2"], False), UndoKind.IN_PLACE, "c1"),
        ("outside the window", revision(1), UndoWorld("c2", ["c2"], False), UndoKind.UPGRADE, ""),
        ("its cluster serves", revision(1), UndoWorld("c1", ["c1"], False), UndoKind.SAME_CLUSTER, "c1"),
        ("during an upgrade", revision(1), UndoWorld("c2", ["c1", "c2", "c3"], True), UndoKind.UPGRADE, ""),
        (
            "never served",
            revision(2, "Aborted", cluster=""),
            UndoWorld("c1", ["c1"], False),
            UndoKind.UPGRADE,
            "",
        ),
    ],
)
def test_undo_plan(what: str, target: Revision, world: UndoWorld, kind: UndoKind, cluster: str) -> None:
    plan = undo_plan(target, world)
    assert (plan.kind, plan.cluster) == (kind, cluster), what
    assert plan.message.startswith(f"undo to revision {target.number}: ")


@pytest.mark.parametrize(("incremental", "capacity"), [(False, None), (True, 0)])
def test_a_reinstated_cluster_is_the_pending_one(incremental: bool, capacity: int | None) -> None:
    status = RayServiceStatuses(active_service_status=RayServiceStatus(ray_cluster_name="c2"))
    result = with_reinstated_cluster(status, "c1", incremental)
    assert result.pending_service_status.ray_cluster_name == "c1"
    assert result.pending_service_status.target_capacity == capacity
    assert status.pending_service_status.ray_cluster_name == ""  # the input is not changed


def _status(*conditions: str) -> RayServiceStatuses:
    status = RayServiceStatuses(active_service_status=RayServiceStatus(ray_cluster_name="c1"))
    for condition in conditions:
        status.conditions = set_condition(status.conditions, condition, ConditionStatus.TRUE, "r", "m", 1, T0)
    return status


@pytest.mark.parametrize(
    ("what", "aborted", "conditions", "rejection"),
    [
        ("aborted, rollback done", "h2", (), None),
        ("still rolling back", "h2", ("UpgradeInProgress", "RollbackInProgress"), "is still rolling back"),
        ("an upgrade runs", None, ("UpgradeInProgress",), "an upgrade of RayService ns/svc is in progress"),
        ("nothing aborted", None, (), "no aborted upgrade of the current spec of RayService ns/svc"),
        ("another spec aborted", "h9", (), "no aborted upgrade of the current spec"),
    ],
)
def test_retry_rejection(
    what: str, aborted: str | None, conditions: tuple[str, ...], rejection: str | None
) -> None:
    found = retry_rejection(UpgradeControls(aborted_goal_hash=aborted), _status(*conditions), "h2", "ns/svc")
    if rejection is None:
        assert found is None, what
    else:
        assert found is not None
        assert rejection in found, what


def test_retry_forgets_the_aborted_goal_and_reopens_the_revision() -> None:
    assert retried_controls(UpgradeControls(aborted_goal_hash="h2")) == UpgradeControls()
    history = [revision(1), Revision(2, 2, "s2", "h2", {}, T0, "RolledBack", settled=T0, reason="X")]
    [first, second] = retried_revisions(history)
    assert first == history[0]
    assert (second.outcome, second.settled, second.reason) == ("Progressing", None, "")


@pytest.mark.parametrize(
    ("what", "cluster", "aborted", "goal", "expected"),
    [
        ("active cluster, desired spec aborted", "c1", "h2", "h2", "cached"),
        ("active cluster, nothing aborted", "c1", None, "h2", "wanted"),
        ("active cluster, another spec aborted", "c1", "h9", "h2", "wanted"),
        ("the pending cluster", "c2", "h2", "h2", "wanted"),
        ("active cluster without a cache entry", "c3", "h2", "h2", "wanted"),
    ],
)
def test_serve_config_while_aborted(
    what: str, cluster: str, aborted: str | None, goal: str, expected: str
) -> None:
    state = RayServiceStatuses(
        active_service_status=RayServiceStatus(ray_cluster_name="c3" if cluster == "c3" else "c1"),
        pending_service_status=RayServiceStatus(ray_cluster_name="c2"),
    )
    cache = {"c1": "cached", "c2": "cached"}
    assert serve_config_while_aborted(cluster, state, aborted, goal, cache, "wanted") == expected, what
