"""`rollout undo` (issue #18): which revision to go back to, and how.

The revision (`undo_target`): the one named by `--to-revision`, else the newest earlier revision that was
promoted. An unknown revision, or the current one, is rejected with a message saying why (the update's
validator asks first, so nothing changes).

How (`undo_plan`), the revision's spec is applied again as a new revision in every case:
- `SAME_CLUSTER`: the active cluster already runs that RayCluster spec (e.g. the newest revision was aborted
  and the old cluster kept serving): nothing moves; a changed Serve config is applied in place as usual.
- `IN_PLACE`: the cluster that served the revision is still up (a promotion keeps the previous cluster for
  `rayClusterDeletionDelaySeconds`, KubeRay's default 60 s): it becomes the pending cluster again, is ready
  at once, and takes the traffic back without a new cluster (blue-green: the Services switch back; an
  incremental upgrade: promoted at once, capacity first, then all the traffic).
- `UPGRADE`: that cluster is gone (the window passed) or an upgrade is in progress: an ordinary upgrade to
  the old spec (a new cluster; during an upgrade, KubeRay's rollback-then-upgrade of a changed spec).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from models.rayservice import RayServiceStatus, RayServiceStatuses
from workflows.decisions.rayservice.upgrade.incremental import initial_pending_target_capacity
from workflows.decisions.rayservice.upgrade.revisions import Revision, RevisionOutcome

__all__ = [
    "UndoKind",
    "UndoPlan",
    "UndoRejected",
    "UndoWorld",
    "undo_plan",
    "undo_target",
    "with_reinstated_cluster",
]


class UndoRejected(ValueError):
    """The undo does not apply; str(error) says why."""


class UndoKind(StrEnum):
    SAME_CLUSTER = "SameCluster"
    IN_PLACE = "InPlace"
    UPGRADE = "Upgrade"


def undo_target(history: Sequence[Revision], to_revision: int | None, name: str) -> Revision:
    """The revision an undo goes back to (`name` is NAMESPACE/NAME, for the messages)."""
    if not history:
        raise UndoRejected(f"undo rejected: RayService {name} has no revision history yet")
    newest = history[-1]
    if to_revision is None:
        earlier = [r for r in history[:-1] if r.outcome == RevisionOutcome.PROMOTED]
        if not earlier:
            raise UndoRejected(
                f"undo rejected: RayService {name} has no earlier promoted revision to go back to "
                f"(revisions kept: {_numbers(history)})"
            )
        return earlier[-1]
    found = next((r for r in history if r.number == to_revision), None)
    if found is None:
        raise UndoRejected(
            f"undo rejected: revision {to_revision} is not in the history of RayService {name} "
            f"(revisions kept: {_numbers(history)})"
        )
    if found is newest:
        raise UndoRejected(
            f"undo rejected: revision {to_revision} is the current revision of RayService {name}"
        )
    return found


def _numbers(history: Sequence[Revision]) -> str:
    return ", ".join(str(r.number) for r in history)


@dataclass(frozen=True)
class UndoWorld:
    active_cluster: str
    live_clusters: Sequence[str]  # the RayClusters the RayService still owns (not deleted yet)
    upgrading: bool


@dataclass(frozen=True)
class UndoPlan:
    kind: UndoKind
    cluster: str  # the cluster to serve again (SAME_CLUSTER, IN_PLACE), "" for UPGRADE
    message: str


def undo_plan(target: Revision, world: UndoWorld) -> UndoPlan:
    """Undo in place (the revision's cluster is still up), on the same cluster, or as a new upgrade."""
    number, cluster = target.number, target.cluster
    if cluster and cluster == world.active_cluster:
        message = f"undo to revision {number}: cluster {cluster} already serves its RayCluster spec"
        return UndoPlan(UndoKind.SAME_CLUSTER, cluster, message)
    if world.upgrading:
        message = (
            f"undo to revision {number}: an upgrade is in progress, so its spec is applied as a changed spec "
            "(the upgrade rolls back first)"
        )
        return UndoPlan(UndoKind.UPGRADE, "", message)
    if cluster and cluster in world.live_clusters:
        message = f"undo to revision {number}: traffic moves back to its cluster {cluster}, still up"
        return UndoPlan(UndoKind.IN_PLACE, cluster, message)
    gone = f"its cluster {cluster} was deleted" if cluster else "no cluster of it is left"
    message = f"undo to revision {number}: {gone}, so a new cluster is upgraded to its spec"
    return UndoPlan(UndoKind.UPGRADE, "", message)


def with_reinstated_cluster(
    status: RayServiceStatuses, cluster: str, incremental: bool
) -> RayServiceStatuses:
    """The status once an in-place undo made `cluster` (the previous, still running cluster) the pending one
    again: the next pass finds it ready and promotes it. An incremental upgrade starts it at target capacity
    0, as any pending cluster (the workflow then promotes at once: capacity first, then all the traffic)."""
    result = status.model_copy(deep=True)
    result.pending_service_status = RayServiceStatus(ray_cluster_name=cluster)
    if incremental:
        capacity = initial_pending_target_capacity(result)
        if capacity is not None:
            result.pending_service_status.target_capacity = capacity
    return result
