"""The timeline's pieces shared by the demo and `raypilot timeline`: a status side, the observed share of the
new version, and the PNG."""

from __future__ import annotations

from pathlib import Path

from raypilot.cli.timeline import (
    ClusterPoint,
    SideView,
    share_series,
    side_view,
    write_timeline_png,
)
from raypilot.load import FAILED, Sample


def test_side_view_reads_a_side_and_treats_an_empty_one_as_absent() -> None:
    assert side_view({"rayClusterName": "c", "trafficRoutedPercent": 25, "targetCapacity": 50}) == SideView(
        "c", 25, 50
    )
    assert side_view({"rayClusterName": "c"}) == SideView("c", None, None)
    assert side_view({}) is None
    assert side_view(None) is None
    assert side_view({"rayClusterName": "c", "trafficRoutedPercent": True}) == SideView("c", None, None)


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
    # an upgrade: the new cluster gains capacity, then traffic, then is promoted
    series = {
        "v1": [
            ClusterPoint(0.0, 100, 100),
            ClusterPoint(3.0, 50, 100),
            ClusterPoint(4.0, 50, 50),
            ClusterPoint(6.0, 0, 0),
        ],
        "v2": [
            ClusterPoint(0.0, 0, 0),
            ClusterPoint(2.0, 0, 50),
            ClusterPoint(3.0, 50, 50),
            ClusterPoint(6.0, 100, 100),
        ],
    }
    share = [(0.5, 0.0), (3.5, 48.0), (6.5, 100.0)]
    path = write_timeline_png(
        tmp_path / "out" / "timeline.png", series, share, "upgrade", "v2 share", [(2.0, "v2 serving")]
    )
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 10_000  # axes, four lines, dots and a legend; an empty figure is a few kB
