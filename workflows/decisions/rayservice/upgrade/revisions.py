"""A RayService's revision history (issue #18): the last N specs it was given, each with its outcome.

A revision is one accepted spec (one generation): its number, the hash of its whole spec (shown) and of the
RayCluster it asks for (to know which cluster runs it), the manifest itself (kept once per revision, never
per upgrade step: it is what `rollout undo` applies again), when it was accepted and how it ended:
- Progressing: the newest revision, not settled yet (its upgrade runs, or strategy None left it unapplied);
- Promoted: a cluster running its RayCluster spec serves it (after an upgrade, or changed in place);
- Aborted: the `abort` control rolled its upgrade back;
- RolledBack: raypilot rolled it back by itself (an unhealthy new cluster, a progress deadline, a gate);
- Superseded: a newer spec came before it settled.

Kept in the workflow state, carried through continue-as-new, shown by the `status` query (without the
manifests) and by `raypilot rollout history`. N is the rollout setting `revisionHistoryLimit` (default 10;
the newest revision is always kept).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from models.hashing import json_hash

__all__ = [
    "DEFAULT_REVISION_HISTORY_LIMIT",
    "Revision",
    "RevisionOutcome",
    "RevisionsSeen",
    "record_revision",
    "revision_rows",
    "served_config",
    "settle_revisions",
    "spec_hash",
]

DEFAULT_REVISION_HISTORY_LIMIT: Final = 10
REASON_ABORTED_BY_CONTROL: Final = "UpgradeAborted"


class RevisionOutcome(StrEnum):
    PROGRESSING = "Progressing"
    PROMOTED = "Promoted"
    ABORTED = "Aborted"
    ROLLED_BACK = "RolledBack"
    SUPERSEDED = "Superseded"


@dataclass(frozen=True)
class Revision:
    number: int
    generation: int
    spec_hash: str
    cluster_hash: str
    manifest: dict[str, Any]
    created: datetime
    outcome: str = RevisionOutcome.PROGRESSING.value
    settled: datetime | None = None
    # The RayCluster that served it (set at promotion): a fast undo moves traffic back to it while it is up.
    cluster: str = ""
    reason: str = ""
    undo_of: int | None = None
    # The Serve config last submitted to `cluster` when it was promoted: an in-place undo that finds it equal
    # to the revision's does not submit it again (Serve would report no change to wait for).
    serve_config: str = ""


def spec_hash(manifest: Mapping[str, Any]) -> str:
    """Hash of the whole spec (RayCluster config, Serve config, strategy...)."""
    return json_hash(manifest.get("spec") or {})


def record_revision(
    history: Sequence[Revision],
    manifest: dict[str, Any],
    generation: int,
    cluster_hash: str,
    now: datetime,
    limit: int = DEFAULT_REVISION_HISTORY_LIMIT,
    undo_of: int | None = None,
) -> list[Revision]:
    """The history once the spec of `generation` is known: unchanged when that generation is the newest
    revision already; else a new revision (numbered after the newest), the previous one Superseded if it
    had not settled, and only the newest `limit` kept (at least one)."""
    revisions = list(history)
    if revisions and revisions[-1].generation == generation:
        return revisions
    if revisions and revisions[-1].outcome == RevisionOutcome.PROGRESSING:
        revisions[-1] = dataclasses.replace(
            revisions[-1], outcome=RevisionOutcome.SUPERSEDED.value, settled=now
        )
    number = revisions[-1].number + 1 if revisions else 1
    revisions.append(
        Revision(
            number=number,
            generation=generation,
            spec_hash=spec_hash(manifest),
            cluster_hash=cluster_hash,
            manifest=manifest,
            created=now,
            undo_of=undo_of,
        )
    )
    return revisions[-max(1, limit) :]


@dataclass(frozen=True)
class RevisionsSeen:
    """What a pass left: the cluster serving (and the hash of the spec it runs), whether an upgrade or a
    rollback runs, the goal an abort or rollback suppressed, and the rollback's condition reason."""

    active_cluster: str
    active_cluster_hash: str
    upgrading: bool
    aborted_goal_hash: str | None
    now: datetime
    rollback_reason: str = ""
    active_serve_config: str = ""


def settle_revisions(history: Sequence[Revision], seen: RevisionsSeen) -> list[Revision]:
    """The newest revision settled when this pass decided it: Promoted once its spec serves with no upgrade
    in progress; Aborted (the abort control) or RolledBack (raypilot's own rollback) once its goal was
    suppressed."""
    revisions = list(history)
    if not revisions or revisions[-1].outcome != RevisionOutcome.PROGRESSING:
        return revisions
    newest = revisions[-1]
    if not seen.upgrading and seen.active_cluster and seen.active_cluster_hash == newest.cluster_hash:
        revisions[-1] = dataclasses.replace(
            newest,
            outcome=RevisionOutcome.PROMOTED.value,
            settled=seen.now,
            cluster=seen.active_cluster,
            serve_config=seen.active_serve_config,
        )
    elif seen.aborted_goal_hash is not None and seen.aborted_goal_hash == newest.cluster_hash:
        by_control = seen.rollback_reason in ("", REASON_ABORTED_BY_CONTROL)
        outcome = RevisionOutcome.ABORTED if by_control else RevisionOutcome.ROLLED_BACK
        revisions[-1] = dataclasses.replace(
            newest, outcome=outcome.value, settled=seen.now, reason=seen.rollback_reason
        )
    return revisions


def served_config(history: Sequence[Revision], cluster: str) -> str:
    """The Serve config `cluster` last served, as recorded by the newest revision promoted on it."""
    promoted = [r for r in history if r.cluster == cluster and r.outcome == RevisionOutcome.PROMOTED]
    return promoted[-1].serve_config if promoted else ""


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def revision_rows(history: Sequence[Revision], *, manifests: bool = False) -> list[dict[str, Any]]:
    """The history as the `status` query and `raypilot rollout history` show it (camelCase), newest last;
    the manifests only when asked (`revisions` query)."""
    rows: list[dict[str, Any]] = []
    for revision in history:
        row: dict[str, Any] = {
            "revision": revision.number,
            "generation": revision.generation,
            "specHash": revision.spec_hash,
            "created": _time(revision.created),
            "outcome": revision.outcome,
        }
        if revision.settled is not None:
            row["settled"] = _time(revision.settled)
        if revision.cluster:
            row["rayClusterName"] = revision.cluster
        if revision.reason:
            row["reason"] = revision.reason
        if revision.undo_of is not None:
            row["undoOf"] = revision.undo_of
        if manifests:
            row["manifest"] = revision.manifest
        rows.append(row)
    return rows
