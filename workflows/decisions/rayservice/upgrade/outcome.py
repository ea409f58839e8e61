"""The outcome of one generation of a RayService, for whoever waits for it (the Nexus operation
`upgrade_rayservice`, docs/contract.md §9): read from the revision history (revisions.py), which records
how each accepted spec ended.

- Promoted: promoted (the RayCluster that serves it);
- Aborted (the `abort` control) and RolledBack (raypilot's own rollback): rolled-back, with the reason;
- Superseded (a newer spec came before it settled): failed;
- Progressing, or not recorded yet (the pass that acts on the spec has not run): not decided;
- older than every revision kept (the history was trimmed past it): failed, since how it ended is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from wire.nexus import UpgradeOutcome, UpgradeResult, UpgradeWatch
from workflows.decisions.rayservice.upgrade.revisions import (
    REASON_ABORTED_BY_CONTROL,
    Revision,
    RevisionOutcome,
)

__all__ = ["REASON_DELETED", "REASON_NOT_RUNNING", "deleted_outcome", "settled_watches", "upgrade_outcome"]

REASON_DELETED: Final = "the RayService was deleted before this generation settled"
REASON_NOT_RUNNING: Final = "no workflow runs this RayService (it was never applied, or it was deleted)"


def _superseded_reason(newer: Revision | None) -> str:
    if newer is None:
        return "superseded by a newer spec before it settled"
    return f"superseded by generation {newer.generation} before it settled"


def upgrade_outcome(
    revisions: Sequence[Revision], generation: int, namespace: str, name: str
) -> UpgradeOutcome | None:
    """How `generation` ended, or None while it is not decided."""
    matching = [revision for revision in revisions if revision.generation == generation]
    if not matching:
        if revisions and generation < revisions[0].generation:
            reason = f"generation {generation} is older than the revision history kept"
            return UpgradeOutcome(UpgradeResult.FAILED.value, reason, namespace, name, generation)
        return None
    revision = matching[-1]

    def outcome(result: UpgradeResult, reason: str) -> UpgradeOutcome:
        return UpgradeOutcome(
            result.value, reason, namespace, name, generation, revision.number, revision.cluster
        )

    if revision.outcome == RevisionOutcome.PROMOTED:
        return outcome(UpgradeResult.PROMOTED, f"serving on RayCluster {revision.cluster}")
    if revision.outcome == RevisionOutcome.ABORTED:
        return outcome(UpgradeResult.ROLLED_BACK, revision.reason or REASON_ABORTED_BY_CONTROL)
    if revision.outcome == RevisionOutcome.ROLLED_BACK:
        return outcome(UpgradeResult.ROLLED_BACK, revision.reason or "rolled back")
    if revision.outcome == RevisionOutcome.SUPERSEDED:
        newer = next((r for r in revisions if r.number > revision.number), None)
        return outcome(UpgradeResult.FAILED, _superseded_reason(newer))
    return None


def deleted_outcome(generation: int, namespace: str, name: str) -> UpgradeOutcome:
    """What a watcher learns when the RayService is deleted before its generation settled."""
    return UpgradeOutcome(UpgradeResult.FAILED.value, REASON_DELETED, namespace, name, generation)


def settled_watches(
    watches: Sequence[UpgradeWatch], revisions: Sequence[Revision], namespace: str, name: str
) -> tuple[list[tuple[UpgradeWatch, UpgradeOutcome]], list[UpgradeWatch]]:
    """The watches whose generation is decided (each with its outcome), and those still waiting."""
    answered: list[tuple[UpgradeWatch, UpgradeOutcome]] = []
    waiting: list[UpgradeWatch] = []
    for watch in watches:
        outcome = upgrade_outcome(revisions, watch.generation, namespace, name)
        if outcome is None:
            waiting.append(watch)
        else:
            answered.append((watch, outcome))
    return answered, waiting
