"""cleanUpRayClusterInstance: KubeRay's deletion-delay table (nil / 0 / 5 s) and the durable schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.rayservice import RayServiceSpec
from workflows.decisions.rayservice.cleanup import (
    OwnedClusters,
    cluster_deletion_delay,
    plan_dangling_cluster_cleanup,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def spec(delay: int | None) -> RayServiceSpec:
    return RayServiceSpec.model_validate(
        {
            "rayClusterDeletionDelaySeconds": delay,
            "rayClusterConfig": {
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}}
            },
        }
    )


@pytest.mark.parametrize(
    ("delay", "expected"),
    [(None, timedelta(seconds=60)), (0, timedelta(0)), (5, timedelta(seconds=5))],
)
def test_deletion_delay(delay: int | None, expected: timedelta) -> None:
    assert cluster_deletion_delay(spec(delay)) == expected
    assert cluster_deletion_delay(spec(delay), rayservice_deleting=True) == timedelta(0)


@pytest.mark.parametrize(
    ("delay", "scheduled_at", "deleted_now"),
    [(None, NOW + timedelta(seconds=60), False), (5, NOW + timedelta(seconds=5), False), (0, None, True)],
)
def test_a_dangling_cluster_is_scheduled_once(
    delay: int | None, scheduled_at: datetime | None, deleted_now: bool
) -> None:
    plan = plan_dangling_cluster_cleanup(
        OwnedClusters(["svc-old", "svc-new"], "svc-new", "", {}, cluster_deletion_delay(spec(delay)), NOW)
    )
    assert plan.has_clusters_to_clean is True
    assert plan.schedule.get("svc-old") == scheduled_at
    assert plan.next_due == scheduled_at
    assert plan.delete_now == (("svc-old",) if deleted_now else ())


def test_the_schedule_survives_and_fires_exactly_at_the_due_time() -> None:
    due = NOW + timedelta(seconds=60)
    before = plan_dangling_cluster_cleanup(
        OwnedClusters(
            ["svc-old"], "svc-new", "", {"svc-old": due}, timedelta(seconds=60), due - timedelta(seconds=1)
        )
    )
    assert before.delete_now == ()
    assert before.schedule == {"svc-old": due}  # not pushed back by a later pass
    at_due = plan_dangling_cluster_cleanup(
        OwnedClusters(["svc-old"], "svc-new", "", {"svc-old": due}, timedelta(seconds=60), due)
    )
    assert at_due.delete_now == ("svc-old",)
    assert at_due.schedule == {}
    assert at_due.next_due is None


def test_clusters_in_use_are_not_cleaned_and_stale_entries_are_dropped() -> None:
    schedule = {"svc-a": NOW, "svc-gone": NOW}
    plan = plan_dangling_cluster_cleanup(
        OwnedClusters(["svc-a", "svc-b"], "svc-a", "svc-b", schedule, timedelta(seconds=60), NOW)
    )
    assert plan == plan.__class__({}, (), False, None)


def test_a_deleted_rayservice_deletes_every_cluster_now() -> None:
    plan = plan_dangling_cluster_cleanup(
        OwnedClusters(["svc-a", "svc-b"], "svc-a", "svc-b", {}, timedelta(0), NOW, rayservice_deleting=True)
    )
    assert plan.delete_now == ("svc-a", "svc-b")
    assert plan.has_clusters_to_clean is True
