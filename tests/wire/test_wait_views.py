"""The views the roll and drain waits compare: they change exactly when something a decision reads changed."""

from __future__ import annotations

from typing import Any

import pytest

from wire.views import cluster_pods_view, quiet_reads_after


def pod(name: str, *, phase: str = "Running", ready: str = "True", **extra: Any) -> dict[str, Any]:
    labels = {"ray.io/node-type": "worker", "ray.io/group": "g"}
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "labels": labels, **extra}
    conditions = [{"type": "Ready", "status": ready, "lastTransitionTime": "t0"}]
    return {"metadata": metadata, "status": {"phase": phase, "conditions": conditions, "podIP": "10.0.0.1"}}


BASE = [pod("a"), pod("b")]


@pytest.mark.parametrize(
    ("pods", "changed"),
    [
        ([pod("b"), pod("a")], False),  # order
        ([pod("a", resourceVersion="9"), pod("b")], False),  # what no decision reads
        ([{**pod("a"), "status": {**pod("a")["status"], "podIP": "10.0.0.9"}}, pod("b")], False),
        ([pod("a")], True),  # a Pod gone
        ([pod("a"), pod("b"), pod("c")], True),  # a Pod created
        ([pod("a", ready="False"), pod("b")], True),  # readiness
        ([pod("a", phase="Pending"), pod("b")], True),  # phase
        ([pod("a", deletionTimestamp="t1"), pod("b")], True),  # being deleted
        ([{**pod("a"), "metadata": {**pod("a")["metadata"], "uid": "other"}}, pod("b")], True),  # replaced
    ],
)
def test_cluster_pods_view_changes_with_what_a_roll_decides_on(
    pods: list[dict[str, Any]], changed: bool
) -> None:
    assert (cluster_pods_view(pods) != cluster_pods_view(BASE)) is changed


@pytest.mark.parametrize(
    ("quiet_reads", "in_flight", "after"),
    [(0, 0, 1), (2, 0, 3), (0, 4, 0), (2, 4, 0), (2, None, 0), (0, None, 0)],
)
def test_quiet_reads_after_counts_zero_readings_in_a_row(
    quiet_reads: int, in_flight: int | None, after: int
) -> None:
    assert quiet_reads_after(quiet_reads, in_flight) == after
