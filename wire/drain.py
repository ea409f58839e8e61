"""Input of the activity that reads how many HTTP requests a RayCluster's Serve proxies have in flight."""

from __future__ import annotations

from dataclasses import dataclass

from models.naming import DEFAULT_METRICS_PORT
from wire.dashboard import DashboardTarget

__all__ = [
    "CloseServeConnections",
    "ServeConnectionsClosing",
    "ServeRequestsInFlight",
    "WaitServeRequestsInFlight",
]


@dataclass(frozen=True)
class ServeRequestsInFlight:
    """Every Pod of the RayCluster (label ray.io/cluster) is read at `<podIP>:<metrics_port>/metrics` (through
    the Pod proxy when the worker runs outside the cluster); the answer is the sum of their
    `ray_serve_num_ongoing_http_requests` gauges, or None when no Pod's metrics could be read."""

    namespace: str
    cluster_name: str
    metrics_port: int = DEFAULT_METRICS_PORT


@dataclass(frozen=True)
class WaitServeRequestsInFlight:
    """Read the in-flight requests as `ServeRequestsInFlight` does, every `poll_seconds` (the first reading
    one interval after the start: the workflow has just read), until a reading changes the run of zero
    readings the workflow holds (`quiet_reads`, as `wire.views.quiet_reads_after` counts it): any zero
    reading, or the first non-zero one (or none at all) after zeros. Returns that reading."""

    namespace: str
    cluster_name: str
    metrics_port: int
    quiet_reads: int
    poll_seconds: float


@dataclass(frozen=True)
class CloseServeConnections:
    """Run the connection-closing driver on the RayCluster behind `target` as the Ray job `submission_id`
    (see activities/serve_connections.py): for `seconds`, its Serve proxies answer every response on a
    kept-alive connection with `Connection: close` and then close that connection."""

    target: DashboardTarget
    submission_id: str
    seconds: float
    poll_seconds: float = 0.5


@dataclass(frozen=True)
class ServeConnectionsClosing:
    """How many Serve proxies (HTTP servers) close their connections after their responses now; `error` says
    why none does (the driver failed: no Serve, a Ray without the hooks it uses)."""

    proxies: int
    error: str = ""
