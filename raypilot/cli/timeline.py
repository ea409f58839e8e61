"""The upgrade timeline of the demo: traffic weight and target capacity of both RayClusters over time, and the
share of answers the new version gave, as data (pure) and as a PNG (matplotlib, Agg backend).

The workflow keeps no list of the steps it took (its status shows only the current traffic and capacity of
each side and lastTrafficMigratedTime), so the series come from `status` query samples the demo polls during
the upgrade: a step shows up at the first poll after it, i.e. up to one poll interval late.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raypilot.load import FAILED, Sample

__all__ = [
    "ClusterPoint",
    "SideView",
    "StatusSample",
    "Step",
    "cluster_series",
    "share_series",
    "side_view",
    "status_sample",
    "upgrade_steps",
    "write_timeline_png",
]


@dataclass(frozen=True)
class SideView:
    """One side (active or pending) of a RayService status: its cluster, traffic and target capacity in %."""

    cluster: str
    traffic: int | None
    capacity: int | None


@dataclass(frozen=True)
class StatusSample:
    """The two sides of a RayService status as polled `at` seconds after the upgrade began."""

    at: float
    active: SideView | None
    pending: SideView | None


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


def status_sample(at: float, status: Mapping[str, Any]) -> StatusSample:
    return StatusSample(
        at, side_view(status.get("activeServiceStatus")), side_view(status.get("pendingServiceStatus"))
    )


def _point(sample: StatusSample, cluster: str) -> ClusterPoint:
    """Where `cluster` stands in one sample. Outside an incremental upgrade KubeRay leaves the percentages
    unset: the active cluster then serves everything (100/100); a cluster on neither side has none (0/0)."""
    if sample.active is not None and sample.active.cluster == cluster:
        side, default = sample.active, 100
    elif sample.pending is not None and sample.pending.cluster == cluster:
        side, default = sample.pending, 0
    else:
        return ClusterPoint(sample.at, 0, 0)
    traffic = side.traffic if side.traffic is not None else default
    capacity = side.capacity if side.capacity is not None else default
    return ClusterPoint(sample.at, traffic, capacity)


def cluster_series(samples: Sequence[StatusSample], cluster: str) -> list[ClusterPoint]:
    """The traffic and capacity of `cluster` at every sample (by name, so the new cluster keeps its line when
    it becomes the active one)."""
    return [_point(sample, cluster) for sample in samples]


def upgrade_steps(samples: Sequence[StatusSample], clusters: Sequence[str]) -> list[Step]:
    """Every change of traffic or capacity of the given clusters, in the order the samples saw them."""
    steps: list[Step] = []
    for cluster in clusters:
        series = cluster_series(samples, cluster)
        for previous, current in itertools.pairwise(series):
            if current.capacity != previous.capacity:
                steps.append(Step(current.at, cluster, "capacity", previous.capacity, current.capacity))
            if current.traffic != previous.traffic:
                steps.append(Step(current.at, cluster, "traffic", previous.traffic, current.traffic))
    return sorted(steps, key=lambda step: step.at)


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
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return path
