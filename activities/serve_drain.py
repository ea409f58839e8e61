"""How many HTTP requests a RayCluster's Serve proxies have in flight, from their Prometheus gauges.

Ray 2.60's Serve proxy on every node sets `ray_serve_num_ongoing_http_requests{node_id,node_ip_address}`,
exported by the node's metrics agent on `--metrics-export-port` (KubeRay: 8080). The Ray dashboard has no REST
answer for it, so each Pod's metrics endpoint is read; a Pod that does not answer is skipped (a node without a
proxy, or one already going), and None means none answered, which the drain decision treats as not drained.
A drain in progress waits on the readings (`wait_serve_requests_in_flight`) rather than reading once a pass.
"""

from __future__ import annotations

import asyncio
from typing import Final

import httpx

from activities.dependencies import ActivityDependencies
from activities.heartbeat import Heartbeater
from models.naming import HTTP_CLIENT_DIRECT_TIMEOUT_SECONDS, HTTP_CLIENT_PROXY_TIMEOUT_SECONDS, LABEL_CLUSTER
from wire import stubs
from wire.drain import ServeRequestsInFlight, WaitServeRequestsInFlight
from wire.stubs.common import implements
from wire.views import quiet_reads_after

__all__ = ["ONGOING_HTTP_REQUESTS_GAUGE", "ServeDrainActivities", "ongoing_http_requests"]

ONGOING_HTTP_REQUESTS_GAUGE: Final = "ray_serve_num_ongoing_http_requests"


def ongoing_http_requests(exposition: str) -> int | None:
    """The sum of the gauge's samples in a Prometheus text exposition; None when it has no sample (Serve
    has not started a proxy on that node)."""
    total: float | None = None
    for line in exposition.splitlines():
        if not line.startswith(ONGOING_HTTP_REQUESTS_GAUGE):
            continue
        rest = line[len(ONGOING_HTTP_REQUESTS_GAUGE) :]
        if rest[:1] not in ("{", " "):
            continue  # another metric whose name starts the same way
        try:
            value = float(rest.rsplit("}", 1)[-1].split()[0])
        except (IndexError, ValueError):
            continue
        total = (total or 0.0) + value
    return None if total is None else round(total)


class ServeDrainActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @implements(stubs.read_serve_requests_in_flight)
    async def read_serve_requests_in_flight(self, request: ServeRequestsInFlight) -> int | None:
        """Read-only and safe to retry; a failing API server propagates (retried), an unreachable Pod not."""
        return await self._in_flight(request)

    @implements(stubs.wait_serve_requests_in_flight)
    async def wait_serve_requests_in_flight(self, request: WaitServeRequestsInFlight) -> int | None:
        """Reads every `poll_seconds` (sleeping first: the readings stay that far apart, which the drain
        decision relies on) until a reading changes the zero run the workflow holds; the readings that do
        not (in-flight requests while the workflow holds none at zero) stay here, out of the history.
        Heartbeats the latest reading; heartbeat timeout ~30 s, a retried attempt starts over."""
        read = ServeRequestsInFlight(request.namespace, request.cluster_name, request.metrics_port)
        async with Heartbeater() as beat:
            while True:
                await asyncio.sleep(request.poll_seconds)
                in_flight = await self._in_flight(read)
                beat.details = {"in_flight": in_flight}
                if quiet_reads_after(request.quiet_reads, in_flight) != request.quiet_reads:
                    return in_flight

    async def _in_flight(self, request: ServeRequestsInFlight) -> int | None:
        apiserver = self.dependencies.apiserver()
        pods = await apiserver.get_json(
            f"/api/v1/namespaces/{request.namespace}/pods",
            f"list pods of RayCluster {request.cluster_name!r}",
            params={"labelSelector": f"{LABEL_CLUSTER}={request.cluster_name}"},
        )
        total: int | None = None
        for pod in (pods or {}).get("items") or []:
            found = await self._read_pod(request, pod)
            if found is not None:
                total = (total or 0) + found
        return total

    async def _read_pod(self, request: ServeRequestsInFlight, pod: dict[str, object]) -> int | None:
        metadata = pod.get("metadata") or {}
        status = pod.get("status") or {}
        name = str(metadata.get("name") or "") if isinstance(metadata, dict) else ""
        pod_ip = str(status.get("podIP") or "") if isinstance(status, dict) else ""
        try:
            if self.dependencies.dashboard_access == "proxy":
                response = await self.dependencies.apiserver().request(
                    "GET",
                    f"/api/v1/namespaces/{request.namespace}/pods/{name}:{request.metrics_port}/proxy/metrics",
                    request_timeout=float(HTTP_CLIENT_PROXY_TIMEOUT_SECONDS),
                )
            elif pod_ip:
                response = await self.dependencies.http.get(
                    f"http://{pod_ip}:{request.metrics_port}/metrics",
                    timeout=float(HTTP_CLIENT_DIRECT_TIMEOUT_SECONDS),
                )
            else:
                return None
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        return ongoing_http_requests(response.text)
