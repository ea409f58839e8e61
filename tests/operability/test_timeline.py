"""`raypilot timeline`: a workflow's timeline read from its history, and the picture drawn from it.

The histories are the committed replay histories (tests/replay/histories): an incremental upgrade paused
for a minute and resumed, a blue-green upgrade, a RayJob."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy
import pytest
from matplotlib import image

from raypilot.cli.timeline import ClusterPoint
from raypilot.cli.timeline_command import output_path, write_rayjob_png, write_rayservice_png
from raypilot.cli.timeline_history import (
    cluster_points,
    last_update,
    rebased,
    steps_of,
    timeline_from_history,
)

HISTORIES = Path(__file__).resolve().parents[1] / "replay" / "histories"
OLD, NEW = "svc-nvx66", "svc-8hnpd"  # the clusters the committed history created
BLUE, ORANGE, GRAY = (31, 119, 180), (255, 127, 14), (128, 128, 128)


def _events(name: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads((HISTORIES / name).read_text())["events"]
    return events


def test_an_incremental_upgrade_is_read_from_its_history() -> None:
    timeline = timeline_from_history(_events("rayservice_incremental_pause_resume.json"), "svc")
    assert [mark.label for mark in timeline.phases] == ["Initializing", "Running", "Upgrading", "Running"]
    assert [mark.label for mark in timeline.controls] == ["apply", "pause", "resume"]
    assert timeline.clusters() == [OLD, NEW]
    steps = [
        (step.cluster, step.what, step.before, step.after) for step in steps_of(cluster_points(timeline))
    ]
    assert steps == [
        (OLD, "traffic", 0, 100),  # the HTTPRoute is created: all traffic to the first cluster
        (NEW, "capacity", 0, 50),
        (OLD, "traffic", 100, 50),
        (NEW, "traffic", 0, 50),
        (OLD, "capacity", 100, 50),
        (NEW, "capacity", 50, 100),
        (OLD, "traffic", 50, 0),  # after `resume`: promoted
        (NEW, "traffic", 50, 100),
        (OLD, "capacity", 50, 0),
    ]
    # Steps are timed by the history: the pause held traffic at 50/50 for a minute.
    pause, resume = (mark.at for mark in timeline.controls[1:])
    moves = [step.at for step in steps_of(cluster_points(timeline)) if step.what == "traffic"]
    assert moves[2] < pause < resume <= moves[4]
    assert resume - pause > 59


def test_a_blue_green_upgrade_moves_all_traffic_at_once() -> None:
    timeline = timeline_from_history(_events("rayservice_blue_green_delete.json"), "svc")
    series = cluster_points(timeline)
    old, new = timeline.clusters()
    assert series[old][0].traffic == 100
    assert (series[old][-1].traffic, series[new][-1].traffic) == (0, 100)
    assert [mark.label for mark in timeline.controls] == ["apply", "delete"]


def test_a_rayjob_timeline_is_its_states() -> None:
    timeline = timeline_from_history(_events("rayjob_http_shutdown.json"), "sample")
    assert [mark.label for mark in timeline.phases] == ["Initializing", "Running", "Complete"]
    assert timeline.changes == ()
    assert 0 < timeline.phases[0].at < timeline.phases[1].at < timeline.phases[2].at <= timeline.ended


def test_rebased_series_start_where_each_cluster_stood() -> None:
    series = {"a": [ClusterPoint(1, 100, 100), ClusterPoint(5, 50, 100)], "b": [ClusterPoint(6, 50, 50)]}
    assert rebased(series, 3) == {
        "a": [ClusterPoint(0, 100, 100), ClusterPoint(2, 50, 100)],
        "b": [ClusterPoint(3, 50, 50)],
    }
    timeline = timeline_from_history(_events("rayservice_incremental_pause_resume.json"), "svc")
    assert last_update(timeline, "apply") == timeline.controls[0].at
    assert last_update(timeline, "abort") is None


def _pixels(path: Path) -> numpy.ndarray[Any, Any]:
    rgba = image.imread(str(path))
    return numpy.rint(rgba[..., :3] * 255).astype(int)


def _count(pixels: numpy.ndarray[Any, Any], color: tuple[int, int, int], tolerance: int = 12) -> int:
    return int((numpy.abs(pixels - numpy.array(color)).max(axis=-1) <= tolerance).sum())


def test_the_upgrade_picture_has_axes_both_clusters_and_step_marks(tmp_path: Path) -> None:
    timeline = timeline_from_history(_events("rayservice_incremental_pause_resume.json"), "svc")
    path = write_rayservice_png(
        tmp_path / "svc.png", timeline, cluster_points(timeline), "RayService default/svc"
    )
    pixels = _pixels(path)
    assert pixels.shape[:2] == (500, 1000)
    # Both clusters' lines (their colours), the phase and update marks (gray verticals), the axes (black).
    assert _count(pixels, BLUE) > 500
    assert _count(pixels, ORANGE) > 500
    # Dotted verticals running the plot's height: the phases and updates near the start, `pause` at 11 s
    # and `resume` at 71 s (the x axis spans about 75 s over 680 pixels).
    gray_columns = (numpy.abs(pixels - numpy.array(GRAY)).max(axis=-1) <= 40).sum(axis=0)
    marked = numpy.flatnonzero(gray_columns > 100)
    assert len(marked) >= 4, marked
    assert marked.max() - marked.min() > 500, marked
    dark_rows = (pixels.max(axis=-1) < 60).sum(axis=1)
    assert dark_rows.max() > 400  # an axis spine across most of the width
    assert (pixels.min(axis=-1) > 240).mean() < 0.97  # far from blank


def test_the_rayjob_picture_has_its_states(tmp_path: Path) -> None:
    timeline = timeline_from_history(_events("rayjob_http_shutdown.json"), "sample")
    path = write_rayjob_png(
        tmp_path / "job.png", timeline.phases, timeline.controls, timeline.ended, "RayJob"
    )
    pixels = _pixels(path)
    assert _count(pixels, BLUE) > 300
    svg = write_rayjob_png(tmp_path / "job.svg", timeline.phases, timeline.controls, timeline.ended, "RayJob")
    assert svg.read_text().lstrip().startswith("<?xml")


def test_the_output_is_a_png_or_an_svg() -> None:
    assert output_path("RayService", "ns", "svc", None) == Path("rayservice-ns-svc-timeline.png")
    assert output_path("RayJob", "ns", "j", "x.svg") == Path("x.svg")
    with pytest.raises(Exception, match=r"\.png or \.svg"):
        output_path("RayJob", "ns", "j", "x.pdf")
