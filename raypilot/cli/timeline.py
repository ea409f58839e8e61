"""The timeline's shared pieces: one side (active or pending) of a RayService status, the points and steps
of a cluster's traffic and capacity, the observed share of answers the new version gave, and the PNG
(matplotlib, Agg backend). `raypilot.cli.timeline_history` builds the points and steps from a workflow's
history; the demo and `raypilot timeline` draw them with `write_timeline_png`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from raypilot.load import FAILED, Sample

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ClusterPoint",
    "SideView",
    "Step",
    "save_figure",
    "share_series",
    "side_view",
    "write_timeline_png",
]


@dataclass(frozen=True)
class SideView:
    """One side (active or pending) of a RayService status: its cluster, traffic and target capacity in %."""

    cluster: str
    traffic: int | None
    capacity: int | None


@dataclass(frozen=True)
class ClusterPoint:
    at: float
    traffic: int
    capacity: int


@dataclass(frozen=True)
class Step:
    """A change of one cluster's traffic or capacity, first seen `at` seconds after the upgrade began."""

    at: float
    cluster: str
    what: str  # "traffic" or "capacity"
    before: int
    after: int


def _percent(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def side_view(side: object) -> SideView | None:
    if not isinstance(side, Mapping) or not side.get("rayClusterName"):
        return None
    return SideView(
        str(side["rayClusterName"]),
        _percent(side.get("trafficRoutedPercent")),
        _percent(side.get("targetCapacity")),
    )


def share_series(
    samples: Sequence[Sample], version: str, start: float, end: float, bucket_s: float = 1.0
) -> list[tuple[float, float]]:
    """The observed share (%) of successful answers from `version` per `bucket_s` window between `start` and
    `end` (monotonic seconds, as the load records them), as (window middle relative to start, share). Windows
    without a successful answer are left out."""
    if bucket_s <= 0 or end <= start:
        return []
    buckets = int((end - start) // bucket_s) + 1
    answered = [0] * buckets
    from_version = [0] * buckets
    for sample in samples:
        if sample.version == FAILED or not start <= sample.at < end:
            continue
        index = int((sample.at - start) // bucket_s)
        answered[index] += 1
        from_version[index] += sample.version == version
    return [
        ((index + 0.5) * bucket_s, 100.0 * from_version[index] / answered[index])
        for index in range(buckets)
        if answered[index]
    ]


def write_timeline_png(
    path: Path,
    series: Mapping[str, Sequence[ClusterPoint]],
    share: Sequence[tuple[float, float]],
    title: str,
    share_label: str,
    marks: Sequence[tuple[float, str]] = (),
    xlabel: str = "seconds since the upgrade was applied",
) -> Path:
    """Traffic (solid) and target capacity (dashed) per cluster label as step lines, the observed share as
    dots, `marks` as labelled vertical lines; returns `path`."""
    import matplotlib

    matplotlib.use("Agg")  # no display: this only ever writes a file
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(10, 5))
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    for index, (label, points) in enumerate(series.items()):
        color = colors[index % len(colors)]
        times = [point.at for point in points]
        axes.step(times, [p.traffic for p in points], where="post", color=color, label=f"{label} traffic")
        axes.step(
            times,
            [p.capacity for p in points],
            where="post",
            color=color,
            linestyle="--",
            label=f"{label} target capacity",
        )
    if share:
        axes.plot(
            [at for at, _ in share], [value for _, value in share], "o", color="black", markersize=3,
            label=share_label,
        )  # fmt: skip
    for at, label in marks:
        axes.axvline(at, color="gray", linestyle=":", linewidth=1)
        axes.annotate(label, (at, 102), fontsize="small", color="gray", ha="right", rotation=90, va="top")
    axes.set_xlabel(xlabel)
    axes.set_ylabel("%")
    axes.set_ylim(-5, 105)
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    return save_figure(figure, path)


def save_figure(figure: Figure, path: Path) -> Path:
    """Lays `figure` out, writes it to `path` (making its folder) and frees it; returns `path`."""
    from matplotlib import pyplot

    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return path
