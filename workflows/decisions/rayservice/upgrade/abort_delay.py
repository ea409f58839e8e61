"""raypilot.io/rollout `abortScaleDownDelaySeconds` (issue #34; Argo Rollouts' name): the new cluster of an
upgrade that was aborted or rolled back by raypilot is kept that long for debugging, then deleted.

Which cluster: the pending cluster a pass dropped while the goal is remembered as aborted (a rollback
raypilot ran: the `abort` control, an unhealthy new cluster, a progress or step deadline with `Abort`, a
failed analysis; `dropped_aborted_cluster`), or the new cluster a failed post-promotion analysis switched
away from. A rollback by a reverted spec is KubeRay's and keeps KubeRay's deletion delay.

How: once that cluster is left over (neither active nor pending: the rollback completed), its deletion is
scheduled `abortScaleDownDelaySeconds` from then instead of after `rayClusterDeletionDelaySeconds`
(`keep_aborted_cluster`). The schedule is the workflow state the cleanup already keeps and carries through
continue-as-new, its earliest entry one durable timer; from its due time on the cluster is drained and deleted
as any other left-over cluster. Meanwhile it takes no traffic (the HTTPRoute and the RayService's Services
only know the active cluster), an undo never takes it back, a new upgrade gets a cluster of its own, and
deleting (or suspending) the RayService deletes it at once. Without the setting nothing changes.

The raypilot condition `AbortedClusterKept` (True, reason `KeptForDebugging`) says which cluster is kept
until when, while one is; a Normal Event of the same reason when the hold begins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from models.meta import ConditionStatus
from models.rayservice import RayServiceStatuses
from workflows.decisions.rayservice.conditions import RayServiceEvent, with_condition, without_condition
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls

__all__ = [
    "ABORTED_CLUSTER_KEPT_CONDITION",
    "REASON_KEPT_FOR_DEBUGGING",
    "AbortedClusterHold",
    "dropped_aborted_cluster",
    "keep_aborted_cluster",
    "kept_line",
    "still_kept",
    "with_kept_condition",
]

ABORTED_CLUSTER_KEPT_CONDITION: Final = "AbortedClusterKept"
REASON_KEPT_FOR_DEBUGGING: Final = "KeptForDebugging"


def dropped_aborted_cluster(
    before: tuple[str, str], after: tuple[str, str], controls: UpgradeControls
) -> str:
    """The pending cluster a pass dropped (neither active nor pending after it; `before` and `after` are
    the (active, pending) names) while the goal is remembered as aborted: a rollback raypilot ran, the
    `abort` control or its own. "" otherwise (a promotion, a reverted spec's KubeRay rollback)."""
    pending = before[1]
    if not pending or pending in after or controls.aborted_goal_hash is None:
        return ""
    return pending


@dataclass(frozen=True)
class AbortedClusterHold:
    schedule: dict[str, datetime]  # the cleanup schedule, the aborted cluster's deletion in it once held
    kept: dict[str, datetime]  # the clusters kept for debugging and until when
    aborted: str  # the aborted cluster still to hold ("" once held, or when there is none)
    began: str = ""  # the cluster whose hold began now


def keep_aborted_cluster(
    schedule: Mapping[str, datetime],
    kept: Mapping[str, datetime],
    aborted: str,
    existing: Iterable[str],
    current: tuple[str, str],
    delay_seconds: int | None,
    now: datetime,
) -> AbortedClusterHold:
    """Holds the aborted cluster for `delay_seconds` once it is left over (it exists and is neither of the
    `current` active and pending clusters), unless its deletion is scheduled already. An aborted cluster
    that serves again (active) or is gone is forgotten."""
    names = set(existing)
    result, held = dict(schedule), dict(kept)
    began = ""
    if aborted and (aborted not in names or aborted == current[0]):
        aborted = ""
    elif aborted and aborted != current[1]:
        if delay_seconds is not None and aborted not in result:
            result[aborted] = held[aborted] = now + timedelta(seconds=delay_seconds)
            began = aborted
        aborted = ""
    return AbortedClusterHold(result, held, aborted, began)


def still_kept(
    kept: Mapping[str, datetime], schedule: Mapping[str, datetime], now: datetime
) -> dict[str, datetime]:
    """The clusters still kept for debugging after a cleanup: scheduled for deletion (not deleted, not active
    or pending again) and before their time (from then on they are drained and deleted)."""
    return {name: until for name, until in kept.items() if name in schedule and now < until}


def _instant(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def kept_line(kept: Mapping[str, datetime]) -> str:
    """e.g. "RayCluster svc-x of the aborted upgrade is kept for debugging until 2026-01-01T00:10:00Z"."""
    parts = [f"RayCluster {name} of the aborted upgrade is kept for debugging until {_instant(until)}"
             for name, until in sorted(kept.items())]  # fmt: skip
    return "; ".join(parts) + " (no traffic reaches it; abortScaleDownDelaySeconds of raypilot.io/rollout)"


def with_kept_condition(
    status: RayServiceStatuses, kept: Mapping[str, datetime], began: str, now: datetime
) -> tuple[RayServiceStatuses, list[RayServiceEvent]]:
    """The condition AbortedClusterKept while a cluster is kept (gone when none is; the status unchanged
    when it says so already), and the Event of a hold that began now."""
    present = any(c.type == ABORTED_CLUSTER_KEPT_CONDITION for c in status.conditions)
    if not kept:
        return (without_condition(status, ABORTED_CLUSTER_KEPT_CONDITION) if present else status), []
    line = kept_line(kept)
    updated = with_condition(
        status, ABORTED_CLUSTER_KEPT_CONDITION, ConditionStatus.TRUE, REASON_KEPT_FOR_DEBUGGING, line, now
    )
    if not began:
        return updated, []
    until = _instant(kept[began])
    message = f"RayCluster {began} of the aborted upgrade is kept for debugging until {until}, then deleted."
    return updated, [RayServiceEvent("Normal", REASON_KEPT_FOR_DEBUGGING, message)]
