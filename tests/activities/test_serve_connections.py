"""Kept-alive connections closed after their responses when a cluster's drain starts: the driver's entrypoint
and output, and the activity on a simulated RayCluster (its proxy answers `Connection: close` afterwards, the
job record is gone). On real Ray Serve: tests/integration/test_rayservice_drain_real.py."""

from __future__ import annotations

import shlex

import httpx
import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities.dashboard import DashboardActivities
from activities.registry import ActivityDependencies
from activities.serve_connections import (
    CLOSING_MARKER,
    ServeConnectionActivities,
    close_connections_entrypoint,
    parse_closing_output,
)
from sandbox.ray.simulated_serve import CLOSING_DRIVER_CALL, CLOSING_OUTPUT_PREFIX
from tests.activities.conftest import RecordingEnvironment, ready_raycluster
from tests.activities.test_serve_drain import serving_cluster
from wire.dashboard import DashboardTarget, RayJobKey
from wire.drain import CloseServeConnections

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("logs", "expected"),
    [
        (f"connecting\n{CLOSING_MARKER}2\n", 2),
        (f"{CLOSING_MARKER}1\n{CLOSING_MARKER}3\n", 3),  # the last marker line counts
        (f"{CLOSING_MARKER}0\n", 0),
        (f"{CLOSING_MARKER}many\n", None),
        ("Traceback (most recent call last):\nModuleNotFoundError: No module named 'uvicorn'\n", None),
        ("", None),
    ],
)
def test_parse_closing_output(logs: str, expected: int | None) -> None:
    assert parse_closing_output(logs) == expected


def test_the_entrypoint_passes_the_seconds_and_the_simulated_head_recognises_it() -> None:
    words = shlex.split(close_connections_entrypoint(150.4))
    assert words[:2] == ["python", "-c"]
    assert words[3] == "150"
    assert CLOSING_DRIVER_CALL in words[2]
    assert CLOSING_OUTPUT_PREFIX == CLOSING_MARKER
    compile(words[2], "<driver>", "exec")  # the driver is valid Python


async def test_after_the_activity_the_proxy_closes_kept_alive_connections_after_each_response(
    deps: ActivityDependencies, core_api: client.CoreV1Api
) -> None:
    namespace, pod_ip = await serving_cluster(deps, core_api)
    target = DashboardTarget(namespace=namespace, head_service="rc-head-svc")
    async with httpx.AsyncClient(timeout=20, trust_env=False) as kept_alive:
        before = await kept_alive.get(f"http://{pod_ip}:8000/")
        assert before.status_code == 200
        assert before.headers.get("connection", "").lower() != "close"
        request = CloseServeConnections(target, "close-1", seconds=60, poll_seconds=0.05)
        closing = await RecordingEnvironment().env.run(
            ServeConnectionActivities(deps).close_serve_connections, request
        )
        assert (closing.proxies, closing.error) == (1, "")
        after = await kept_alive.get(f"http://{pod_ip}:8000/")
        assert after.status_code == 200
        assert after.headers["connection"].lower() == "close"
    key = RayJobKey(target, "close-1")
    gone = await ActivityEnvironment().run(DashboardActivities(deps).get_job_info, key)
    assert gone.outcome == "not_found"


async def test_without_serve_the_activity_reports_the_failed_job(
    deps: ActivityDependencies, core_api: client.CoreV1Api
) -> None:
    namespace, _ = await ready_raycluster(deps, core_api)
    target = DashboardTarget(namespace=namespace, head_service="rc-head-svc")
    request = CloseServeConnections(target, "close-2", seconds=60, poll_seconds=0.05)
    activities = ServeConnectionActivities(deps)
    closing = await RecordingEnvironment().env.run(activities.close_serve_connections, request)
    assert closing.proxies == 0
    assert "ended" in closing.error
