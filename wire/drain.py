"""Input of the activity that reads how many HTTP requests a RayCluster's Serve proxies have in flight."""

from __future__ import annotations

from dataclasses import dataclass

from models.naming import DEFAULT_METRICS_PORT

__all__ = ["ServeRequestsInFlight"]


@dataclass(frozen=True)
class ServeRequestsInFlight:
    """Every Pod of the RayCluster (label ray.io/cluster) is read at `<podIP>:<metrics_port>/metrics` (through
    the Pod proxy when the worker runs outside the cluster); the answer is the sum of their
    `ray_serve_num_ongoing_http_requests` gauges, or None when no Pod's metrics could be read."""

    namespace: str
    cluster_name: str
    metrics_port: int = DEFAULT_METRICS_PORT
