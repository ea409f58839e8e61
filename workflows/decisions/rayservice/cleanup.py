"""When a RayService's dangling RayClusters (neither active nor pending) are deleted.

KubeRay counterpart: cleanUpRayClusterInstance (rayservice_controller.go). A dangling cluster first gets a
deletion time `now + rayClusterDeletionDelaySeconds` (nil -> 60 s); it is deleted once that time has passed; a
RayService being deleted deletes every cluster at once.

Where raypilot differs, deliberately:
- The schedule is workflow state (it survives worker restarts; KubeRay's lives in operator memory and restarts
  its countdown), keyed by cluster name, and entries of clusters that no longer exist are dropped.
- A cluster is due at its deletion time exactly (`now >= due`; KubeRay needs `now > due` at a 2 s poll), and
  `next_due` tells the workflow when to arm its single durable timer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from models.rayservice import DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS, RayServiceSpec

__all__ = [
    "CleanupPlan",
    "OwnedClusters",
    "cluster_deletion_delay",
    "plan_dangling_cluster_cleanup",
]


def cluster_deletion_delay(spec: RayServiceSpec, rayservice_deleting: bool = False) -> timedelta:
    """rayClusterDeletionDelaySeconds (nil -> 60 s); zero while the RayService itself is being deleted."""
    if rayservice_deleting:
        return timedelta(0)
    seconds = spec.ray_cluster_deletion_delay_seconds
    return timedelta(seconds=DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS if seconds is None else seconds)


@dataclass(frozen=True)
class CleanupPlan:
    schedule: dict[str, datetime]  # dangling cluster -> when it is deleted (keep in workflow state)
    delete_now: tuple[str, ...]  # clusters to delete on this pass
    has_clusters_to_clean: bool  # hasRayClustersToClean: some cluster is dangling (scheduled or deleted now)
    next_due: datetime | None  # earliest deletion time still in the future (arm a timer for it)


@dataclass(frozen=True)
class OwnedClusters:
    """The RayService's clusters at one pass, for `plan_dangling_cluster_cleanup`.

    `existing` are the names listed with the RayService's ownership labels (not already being deleted);
    `schedule` is the previous plan's schedule (workflow state); `delay` is `cluster_deletion_delay(...)`.
    """

    existing: Iterable[str]
    active: str
    pending: str
    schedule: Mapping[str, datetime]
    delay: timedelta
    now: datetime
    rayservice_deleting: bool = False


def plan_dangling_cluster_cleanup(clusters: OwnedClusters) -> CleanupPlan:
    """Which of the RayService's existing clusters to delete now, and when the others are due.

    A cluster that is active or pending again is taken off the schedule.
    """
    rayservice_deleting, now = clusters.rayservice_deleting, clusters.now
    new_schedule: dict[str, datetime] = {}
    delete_now: list[str] = []
    has_clusters_to_clean = False
    for name in sorted(set(clusters.existing)):
        if not rayservice_deleting and name in (clusters.active, clusters.pending):
            continue
        has_clusters_to_clean = True
        if rayservice_deleting:
            delete_now.append(name)
            continue
        due = clusters.schedule.get(name)
        if due is None:
            due = now + clusters.delay
        if now >= due:
            delete_now.append(name)
        else:
            new_schedule[name] = due
    next_due = min(new_schedule.values(), default=None)
    return CleanupPlan(new_schedule, tuple(delete_now), has_clusters_to_clean, next_due)
