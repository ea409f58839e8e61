"""Whether a dangling RayCluster whose deletion delay has passed may be deleted now (kuberay#3602).

KubeRay deletes the old cluster `rayClusterDeletionDelaySeconds` after the switch, whatever its Serve proxies
are still answering: a request longer than the delay, or one a kept-alive client sends at the deletion, is
lost. So raypilot keeps KubeRay's delay and then also waits until the cluster's Serve proxies report no HTTP
request in flight (the gauge `ray_serve_num_ongoing_http_requests`), read `QUIET_READS_NEEDED` times in a row
`DRAIN_POLL` apart (Ray exports the gauge every 10 s, so one zero may be stale), or until the maximum drain
time after the delay ended, whichever comes first. The maximum is `DEFAULT_MAX_DRAIN` unless the annotation
`raypilot.io/max-drain-seconds: "N"` sets it; `"0"` restores KubeRay's behaviour: nothing is read and the
cluster is deleted at the delay.

The workflow reads the first time when the delay ends and then waits: a drain wait reads every `DRAIN_POLL`
inside its activity and returns only a reading that changes the run of zero readings
(`wire.views.quiet_reads_after`), and the cluster is held until its drain deadline (read then directly, for
the last verdict) rather than due again every `DRAIN_POLL`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Final

from models.rayservice import DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS
from models.rayservice_annotations import MAX_DRAIN_ANNOTATION, whole_seconds
from wire.views import quiet_reads_after

__all__ = [
    "DEFAULT_MAX_DRAIN",
    "DRAIN_POLL",
    "MAX_DRAIN_ANNOTATION",
    "QUIET_READS_NEEDED",
    "Drain",
    "DrainVerdict",
    "decide_drain",
    "drain_deadline",
    "held_drains_due",
    "max_drain_time",
    "next_drain_read",
]

# Ray exports a gauge every metrics_report_interval_ms (10 s in Ray 2.60), so a reading may be up to 10 s old:
# three zero readings 6 s apart span 12 s, so they cannot all predate a request that is still running.
DRAIN_POLL: Final = timedelta(seconds=6)
QUIET_READS_NEEDED: Final = 3
# Without the annotation: as long as KubeRay's own default deletion delay (rayClusterDeletionDelaySeconds,
# 60 s), so a service on KubeRay's defaults keeps its old cluster at most twice that delay. A drained cluster
# goes after three zero readings (12 s), so this bounds only a request still running a minute after the delay
# (or Pods whose metrics the worker cannot read: then the cluster goes at this bound).
DEFAULT_MAX_DRAIN: Final = timedelta(seconds=DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS)


class DrainVerdict(Enum):
    DRAINED = "Drained"  # no request in flight: delete now
    WAIT = "Wait"  # requests in flight (or unknown): read again after DRAIN_POLL
    GIVE_UP = "GiveUp"  # the maximum drain time has passed: delete anyway


@dataclass(frozen=True)
class Drain:
    """One dangling cluster's drain so far (workflow state): when it began and the zero readings in a row."""

    started: datetime
    quiet_reads: int = 0


def max_drain_time(annotations: Mapping[str, str] | None) -> timedelta | None:
    """The maximum drain time: the annotation's seconds, `DEFAULT_MAX_DRAIN` without it, None (delete at the
    delay and read nothing, as KubeRay) for `"0"`. A value that is not a whole number of seconds is rejected
    with the manifest (models/rayservice_annotations.py); were one to reach a run, it drains by default."""
    raw = (annotations or {}).get(MAX_DRAIN_ANNOTATION)
    seconds = None if raw is None else whole_seconds(raw)
    if seconds is None:
        return DEFAULT_MAX_DRAIN
    return timedelta(seconds=seconds) if seconds > 0 else None


def decide_drain(
    drain: Drain, in_flight: int | None, now: datetime, max_drain: timedelta
) -> tuple[DrainVerdict, Drain]:
    """The verdict on one reading of the cluster's in-flight requests (None: no proxy could be read), and the
    drain to keep for the next reading."""
    quiet = quiet_reads_after(drain.quiet_reads, in_flight)
    updated = Drain(drain.started, quiet)
    if quiet >= QUIET_READS_NEEDED:
        return DrainVerdict.DRAINED, updated
    if now >= drain_deadline(drain, max_drain):
        return DrainVerdict.GIVE_UP, updated
    return DrainVerdict.WAIT, updated


def drain_deadline(drain: Drain, max_drain: timedelta) -> datetime:
    """When the drain gives up: the maximum drain time after its first reading."""
    return drain.started + max_drain


def next_drain_read(drain: Drain, max_drain: timedelta, now: datetime, wait_reports: bool) -> datetime:
    """When a held cluster is read next by the pass itself: at its drain deadline while a drain wait reports
    its readings (the last verdict is due then whatever they were), else DRAIN_POLL from now (the cluster's
    drain wait failed)."""
    return drain_deadline(drain, max_drain) if wait_reports else now + DRAIN_POLL


def held_drains_due(
    held: Mapping[str, datetime],
    drains: Mapping[str, Drain],
    max_drain: timedelta | None,
    now: datetime,
    polled: Collection[str] = (),
) -> tuple[list[str], dict[str, datetime]]:
    """With the drain waits: of the clusters held in the deletion schedule, those due now and the others
    with their time. A draining cluster is held until its drain deadline under the maximum drain time as it
    is now (shortened: due sooner; turned off with "0", `max_drain` None: due at once); one whose drain
    wait failed (`polled`) is read by the passes again, DRAIN_POLL apart, until then; any other cluster
    keeps its deletion time."""
    due: list[str] = []
    still: dict[str, datetime] = {}
    for name, at in held.items():
        drain = drains.get(name)
        if drain is not None:
            deadline = now if max_drain is None else drain_deadline(drain, max_drain)
            # A polled cluster keeps its next reading, or has one DRAIN_POLL from now when it was held for
            # a wait (any earlier reading was before now: the readings stay DRAIN_POLL apart).
            at = min(at, now + DRAIN_POLL, deadline) if name in polled else deadline
        if now >= at:
            due.append(name)
        else:
            still[name] = at
    return due, still
