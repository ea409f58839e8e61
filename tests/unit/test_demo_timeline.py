"""The demo's upgrade timeline: series per cluster from polled RayService statuses, steps, the observed share
of the new version, and the PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raypilot.cli.timeline import (
    ClusterPoint,
    SideView,
    Step,
    cluster_series,
    share_series,
    side_view,
    status_sample,
    upgrade_steps,
    write_timeline_png,
)
from raypilot.load import FAILED, Sample

OLD, NEW = "svc-old", "svc-new"


def status(
    active: tuple[str, int | None, int | None], pending: tuple[str, int, int] | None
) -> dict[str, Any]:
    def side(name: str, traffic: int | None, capacity: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"rayClusterName": name}
        if traffic is not None:
            body["trafficRoutedPercent"] = traffic
        if capacity is not None:
            body["targetCapacity"] = capacity
        return body

    return {
        "activeServiceStatus": side(*active),
        "pendingServiceStatus": side(*pending) if pending else {},
    }


# An upgrade as the poll saw it: before it, the new cluster gaining capacity then traffic, after promotion.
UPGRADE = [
    status_sample(0.0, status((OLD, None, None), None)),
    status_sample(1.0, status((OLD, 100, 100), (NEW, 0, 0))),
    status_sample(2.0, status((OLD, 100, 100), (NEW, 0, 50))),
    status_sample(3.0, status((OLD, 50, 100), (NEW, 50, 50))),
    status_sample(4.0, status((OLD, 50, 50), (NEW, 50, 50))),
    status_sample(6.0, status((NEW, None, None), None)),
]


def test_side_view_reads_a_side_and_treats_an_empty_one_as_absent() -> None:
    assert side_view({"rayClusterName": "c", "trafficRoutedPercent": 25, "targetCapacity": 50}) == SideView(
        "c", 25, 50
    )
    assert side_view({"rayClusterName": "c"}) == SideView("c", None, None)
    assert side_view({}) is None
    assert side_view(None) is None
    assert side_view({"rayClusterName": "c", "trafficRoutedPercent": True}) == SideView("c", None, None)


def test_series_follow_each_cluster_by_name_through_promotion() -> None:
    old = cluster_series(UPGRADE, OLD)
    new = cluster_series(UPGRADE, NEW)
    # unset percentages: the active cluster serves everything, a pending one nothing
    assert old[0] == ClusterPoint(0.0, 100, 100)
    assert new[0] == ClusterPoint(0.0, 0, 0)
    assert [(p.traffic, p.capacity) for p in old] == [
        (100, 100),
        (100, 100),
        (100, 100),
        (50, 100),
        (50, 50),
        (0, 0),
    ]
    assert [(p.traffic, p.capacity) for p in new] == [(0, 0), (0, 0), (0, 50), (50, 50), (50, 50), (100, 100)]
    assert [p.at for p in new] == [0.0, 1.0, 2.0, 3.0, 4.0, 6.0]


def test_steps_are_every_change_in_time_order() -> None:
    steps = upgrade_steps(UPGRADE, [OLD, NEW])
    assert steps == [
        Step(2.0, NEW, "capacity", 0, 50),
        Step(3.0, OLD, "traffic", 100, 50),
        Step(3.0, NEW, "traffic", 0, 50),
        Step(4.0, OLD, "capacity", 100, 50),
        Step(6.0, OLD, "capacity", 50, 0),
        Step(6.0, OLD, "traffic", 50, 0),
        Step(6.0, NEW, "capacity", 50, 100),
        Step(6.0, NEW, "traffic", 50, 100),
    ]


def test_no_steps_without_changes() -> None:
    assert upgrade_steps(UPGRADE[:2], [OLD, NEW]) == []


def test_share_series_counts_successful_answers_per_window() -> None:
    samples = [
        Sample(9.9, "v2"),  # before the start: ignored
        Sample(10.1, "v1"),
        Sample(10.5, "v2"),
        Sample(10.9, FAILED, "HTTP 503"),  # failures do not count as answers
        Sample(12.2, "v2"),  # window 11-12 has no answer: left out
        Sample(12.8, "v2"),
        Sample(13.0, "v1"),  # at the end: ignored
    ]
    assert share_series(samples, "v2", start=10.0, end=13.0) == [(0.5, 50.0), (2.5, 100.0)]


def test_share_series_of_nothing_is_empty() -> None:
    assert share_series([], "v2", start=0.0, end=5.0) == []
    assert share_series([Sample(1.0, "v2")], "v2", start=5.0, end=5.0) == []


def test_png_is_written_from_a_synthetic_upgrade(tmp_path: Path) -> None:
    series = {"v1": cluster_series(UPGRADE, OLD), "v2": cluster_series(UPGRADE, NEW)}
    share = [(0.5, 0.0), (3.5, 48.0), (6.5, 100.0)]
    path = write_timeline_png(
        tmp_path / "out" / "timeline.png", series, share, "upgrade", "v2 share", [(2.0, "v2 serving")]
    )
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 10_000  # axes, four lines, dots and a legend; an empty figure is a few kB
