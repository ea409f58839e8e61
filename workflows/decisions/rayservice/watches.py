"""What the RayService workflow waits for, and until when.

KubeRay polls every 2 s; the workflow instead waits for the next thing that can change a decision: a handler
(apply, delete, a control), one long wait activity per cluster (the head becoming ready, then Serve and the
head Pod), the ready endpoints of the serve Services while none are counted, and one durable timer for the
earliest deadline (a dangling cluster's deletion, the initializing timeout, the next traffic step). These
functions decide those waits; the workflow only runs them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from models.raycluster import RayCluster
from workflows.decisions.rayservice.observed_clusters import is_head_pod_ready

WatchKind = Literal["head_ready", "serve", "endpoints", "gateway", "ranks", "pods", "drain"]


def earliest_deadline(*deadlines: datetime | None) -> datetime | None:
    """The one durable timer the workflow arms: the earliest of its deadlines."""
    present = [deadline for deadline in deadlines if deadline is not None]
    return min(present, default=None)


def view_key(view: Mapping[str, Any] | None) -> str:
    """A stable text form of a wait's last view: a running wait is kept as long as its view is current."""
    return "" if view is None else json.dumps(view, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Watch:
    """One long wait activity: `head_ready` (the RayCluster until its head Pod is ready or it is gone),
    `serve` (Serve and the head Pod of a ready cluster until they differ from `last_view`), `endpoints`
    (the serve Services' ready endpoints until they differ from the counts in `last_view`) or `gateway`
    (the Gateway and HTTPRoute statuses, target "<gateway>,<route>") or `ranks` (one read of a cluster's
    Serve replica ranks, `last_view_key` the settled replica set read), `pods` (the Pods of a cluster whose
    Pods restart in place, until they differ from `last_view`) or `drain` (a draining cluster's in-flight
    requests, until a reading changes its run of zero readings, `last_view_key` that run)."""

    kind: WatchKind
    target: str  # the cluster name; for endpoints the Service names joined by ","
    last_view_key: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.target, self.last_view_key)


def desired_watches(
    clusters: Mapping[str, RayCluster | None],
    serve_views: Mapping[str, Mapping[str, Any] | None],
    endpoint_services: Sequence[str],
    endpoint_counts: Mapping[str, int],
    endpoints_expected: bool,
    status_conditions_gate: bool = True,
) -> list[Watch]:
    """What the workflow waits on besides handlers and its timer.

    Each existing cluster (active and pending) has one wait: until its head Pod is ready, then on Serve and
    the head Pod (compared with the last view seen, so an idle cluster never wakes the workflow). The ready
    endpoints are watched only while Serve is ready but no endpoint is counted yet (Services just created or
    switched, a head label just written): afterwards a change of the endpoints always comes with a change
    Serve or the head Pod shows.
    """
    watches: list[Watch] = []
    for name, cluster in clusters.items():
        if cluster is None:
            continue
        if not is_head_pod_ready(cluster, status_conditions_gate):
            watches.append(Watch("head_ready", name))
        else:
            watches.append(Watch("serve", name, view_key(serve_views.get(name))))
    if (
        endpoints_expected
        and endpoint_services
        and sum(endpoint_counts.get(s, 0) for s in endpoint_services) == 0
    ):
        counts = {service: endpoint_counts.get(service, 0) for service in endpoint_services}
        watches.append(Watch("endpoints", ",".join(endpoint_services), view_key(counts)))
    return watches


def serve_wait_is_quiet(
    clusters: Mapping[str, Mapping[str, Any] | None], serve_view: Mapping[str, Any] | None
) -> bool:
    """Whether a cluster's Serve wait may heartbeat once a minute (a lost worker noticed within 3 minutes)
    rather than every 10 s (within 30 s): only on a settled RayService, one cluster whose last Serve view had
    every application RUNNING. Anything in flight (the first deployment, an upgrade or a drain with two
    clusters, an application not RUNNING) keeps the short heartbeat: a worker's crash would otherwise stall
    it for up to 3 minutes."""
    if sum(cluster is not None for cluster in clusters.values()) != 1 or serve_view is None:
        return False
    applications = serve_view.get("applications") or {}
    return bool(applications) and all(app.get("status") == "RUNNING" for app in applications.values())
