"""The in-flight reading of drained deletion: a simulated RayCluster's Serve proxy gauge read through the API
server's Pod proxy and directly at the Pod's address, while requests longer than the reading run."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities.dashboard import DashboardActivities
from activities.registry import ActivityDependencies
from activities.serve_drain import ServeDrainActivities, ongoing_http_requests
from tests.activities.conftest import (
    ActivityKube,
    RecordingEnvironment,
    make_dependencies,
    ready_raycluster,
    versioned_serve_config,
)
from wire.dashboard import DashboardTarget, PutServeConfig
from wire.drain import ServeRequestsInFlight, WaitServeRequestsInFlight

pytestmark = pytest.mark.timeout(60)

SERVE_CONFIG = versioned_serve_config(1)
# As Ray 2.60's metrics agent exports it (labels abridged), beside a metric whose name starts the same way.
RAY_EXPOSITION = """\
# HELP ray_serve_num_ongoing_http_requests The number of ongoing requests in this HTTP Proxy.
# TYPE ray_serve_num_ongoing_http_requests gauge
ray_serve_num_ongoing_http_requests{Component="core_worker",node_id="a",node_ip_address="10.0.0.1"} 3.0
ray_serve_num_ongoing_http_requests{Component="core_worker",node_id="b",node_ip_address="10.0.0.2"} 1.0
ray_serve_num_ongoing_http_requests_total{node_id="a"} 99.0
ray_node_cpu_count{node_id="a"} 2.0
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (RAY_EXPOSITION, 4),
        ("ray_serve_num_ongoing_http_requests 0.0\n", 0),
        ('ray_node_cpu_count{node_id="a"} 2.0\n', None),  # no Serve proxy on this node
        ("", None),
        ('ray_serve_num_ongoing_http_requests{a="b"} not-a-number\n', None),
    ],
)
def test_ongoing_http_requests_sums_the_gauge_of_every_proxy(text: str, expected: int | None) -> None:
    assert ongoing_http_requests(text) == expected


async def serving_cluster(deps: ActivityDependencies, core_api: client.CoreV1Api) -> tuple[str, str]:
    """A RayCluster `rc` whose Serve runs one app; (namespace, head Pod IP)."""
    namespace, raycluster = await ready_raycluster(deps, core_api)
    target = DashboardTarget(namespace=namespace, head_service="rc-head-svc")
    dashboard = DashboardActivities(deps)
    await ActivityEnvironment().run(dashboard.put_serve_config, PutServeConfig(target, SERVE_CONFIG))
    async with asyncio.timeout(20):
        while True:
            details = await ActivityEnvironment().run(dashboard.get_serve_applications, target)
            if (details.get("applications") or {}).get("app1", {}).get("status") == "RUNNING":
                break
            await asyncio.sleep(0.05)
    return namespace, str(raycluster["status"]["head"]["podIP"])


async def test_requests_in_flight_are_read_through_the_pod_proxy_and_directly(
    cluster: ActivityKube, deps: ActivityDependencies, core_api: client.CoreV1Api
) -> None:
    namespace, pod_ip = await serving_cluster(deps, core_api)
    direct = make_dependencies(cluster, "direct")
    request = ServeRequestsInFlight(namespace, "rc")
    try:
        readers = [ServeDrainActivities(deps), ServeDrainActivities(direct)]
        for reader in readers:
            assert await ActivityEnvironment().run(reader.read_serve_requests_in_flight, request) == 0
        async with httpx.AsyncClient(timeout=30) as http:
            slow = [asyncio.create_task(http.get(f"http://{pod_ip}:8000/?work_s=2")) for _ in range(2)]
            async with asyncio.timeout(2):
                while True:  # until both requests reached the proxy
                    read = await ActivityEnvironment().run(readers[0].read_serve_requests_in_flight, request)
                    if read == 2:
                        break
                    await asyncio.sleep(0.05)
            assert await ActivityEnvironment().run(readers[1].read_serve_requests_in_flight, request) == 2
            answers = await asyncio.gather(*slow)
        assert [answer.status_code for answer in answers] == [200, 200]
        for reader in readers:
            assert await ActivityEnvironment().run(reader.read_serve_requests_in_flight, request) == 0
        missing = ServeRequestsInFlight(namespace, "no-such-cluster")
        assert await ActivityEnvironment().run(readers[0].read_serve_requests_in_flight, missing) is None
        # The drain wait reads the same way: a zero lengthens a run of none; nothing read ends a run of one.
        for reader in readers:
            wait = WaitServeRequestsInFlight(namespace, "rc", 8080, quiet_reads=0, poll_seconds=0.01)
            assert await RecordingEnvironment().env.run(reader.wait_serve_requests_in_flight, wait) == 0
        gone = WaitServeRequestsInFlight(namespace, "no-such-cluster", 8080, quiet_reads=1, poll_seconds=0.01)
        assert await RecordingEnvironment().env.run(readers[0].wait_serve_requests_in_flight, gone) is None
    finally:
        await direct.aclose()


@pytest.mark.parametrize(
    ("quiet_reads", "readings", "returned", "reads"),
    [
        (0, [3, 5, None, 0, 7], 0, 4),  # busy readings change nothing the workflow holds
        (2, [0], 0, 1),  # every zero lengthens the run
        (1, [4], 4, 1),  # the first non-zero reading ends a run of zeros
        (1, [None], None, 1),  # so does no answer at all
    ],
)
async def test_the_drain_wait_returns_the_first_reading_that_changes_the_zero_run(
    quiet_reads: int, readings: list[int | None], returned: int | None, reads: int
) -> None:
    pending = list(readings)
    taken: list[float] = []
    drain = ServeDrainActivities(ActivityDependencies.from_env({"HOME": "/nonexistent"}))

    async def scripted(request: ServeRequestsInFlight) -> int | None:
        taken.append(time.monotonic())
        return pending.pop(0)

    drain._in_flight = scripted  # type: ignore[method-assign]
    started = time.monotonic()
    request = WaitServeRequestsInFlight("ns", "rc", 8080, quiet_reads, poll_seconds=0.02)
    try:
        assert await RecordingEnvironment().env.run(drain.wait_serve_requests_in_flight, request) == returned
    finally:
        await drain.dependencies.aclose()
    assert len(taken) == reads
    # The first reading waits one interval too: the workflow read just before starting the wait.
    assert taken[0] - started >= 0.02
