"""The outcome of one RayService generation (upgrade_rayservice's answer), read from the revision history, as
tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from wire.nexus import UpgradeOutcome, UpgradeWatch
from workflows.decisions.rayservice.upgrade.outcome import (
    REASON_DELETED,
    deleted_outcome,
    settled_watches,
    upgrade_outcome,
)
from workflows.decisions.rayservice.upgrade.revisions import Revision

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def revision(number: int, generation: int, outcome: str, cluster: str = "", reason: str = "") -> Revision:
    return Revision(
        number=number,
        generation=generation,
        spec_hash=f"h{generation}",
        cluster_hash=f"c{generation}",
        manifest={},
        created=T0,
        outcome=outcome,
        cluster=cluster,
        reason=reason,
    )


PROMOTED_1 = revision(1, 1, "Promoted", cluster="svc-aaaaa")
HISTORY = [
    PROMOTED_1,
    revision(2, 2, "RolledBack", reason="ProgressDeadlineExceeded"),
    revision(3, 3, "Aborted", reason="UpgradeAborted"),
    revision(4, 4, "Superseded"),
    revision(5, 6, "Promoted", cluster="svc-bbbbb"),
    revision(6, 7, "Progressing"),
]


@pytest.mark.parametrize(
    ("history", "generation", "result", "reason", "revision_number", "cluster"),
    [
        (HISTORY, 1, "promoted", "serving on RayCluster svc-aaaaa", 1, "svc-aaaaa"),
        (HISTORY, 2, "rolled-back", "ProgressDeadlineExceeded", 2, ""),
        (HISTORY, 3, "rolled-back", "UpgradeAborted", 3, ""),
        (HISTORY, 4, "failed", "superseded by generation 6 before it settled", 4, ""),
        (HISTORY, 6, "promoted", "serving on RayCluster svc-bbbbb", 5, "svc-bbbbb"),
        (HISTORY[1:], 1, "failed", "generation 1 is older than the revision history kept", 0, ""),
        ([revision(1, 1, "Aborted")], 1, "rolled-back", "UpgradeAborted", 1, ""),
        ([revision(1, 1, "RolledBack")], 1, "rolled-back", "rolled back", 1, ""),
        ([revision(1, 1, "Superseded")], 1, "failed", "superseded by a newer spec before it settled", 1, ""),
    ],
)
def test_a_settled_generation_has_its_outcome(
    history: list[Revision], generation: int, result: str, reason: str, revision_number: int, cluster: str
) -> None:
    assert upgrade_outcome(history, generation, "ns", "svc") == UpgradeOutcome(
        result, reason, "ns", "svc", generation, revision_number, cluster
    )


@pytest.mark.parametrize(
    ("history", "generation"),
    [
        (HISTORY, 7),  # its upgrade runs
        (HISTORY, 8),  # accepted, the pass that records it has not run yet
        ([], 1),  # a new RayService before its first pass
    ],
)
def test_an_unsettled_generation_is_not_decided(history: list[Revision], generation: int) -> None:
    assert upgrade_outcome(history, generation, "ns", "svc") is None


def test_watches_split_into_answered_and_waiting() -> None:
    done, running = UpgradeWatch(6, "w-6"), UpgradeWatch(7, "w-7")
    answered, waiting = settled_watches([done, running], HISTORY, "ns", "svc")
    assert [(watch, outcome.result) for watch, outcome in answered] == [(done, "promoted")]
    assert waiting == [running]


def test_a_deleted_rayservice_fails_its_watchers() -> None:
    assert deleted_outcome(7, "ns", "svc") == UpgradeOutcome("failed", REASON_DELETED, "ns", "svc", 7)
