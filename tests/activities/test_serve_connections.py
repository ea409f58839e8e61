"""Kept-alive connections closed after their responses when a cluster's drain starts: the driver's entrypoint
and output, its version check (on stand-in `ray` and `uvicorn` modules, and the releases in use here), and the
activity on a simulated RayCluster (its proxy answers `Connection: close` afterwards, the job record is gone).
On real Ray Serve: tests/integration/test_rayservice_bluegreen.py and test_rayservice_incremental.py."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities.dashboard import DashboardActivities
from activities.registry import ActivityDependencies
from activities.serve_connections import (
    CLOSING_MARKER,
    TESTED_RAY,
    TESTED_UVICORN,
    UNSUPPORTED_MARKER,
    ServeConnectionActivities,
    close_connections_entrypoint,
    closing_answer,
    parse_closing_output,
    parse_unsupported_output,
    release_series,
)
from sandbox.ray.simulated_serve import CLOSING_DRIVER_CALL, CLOSING_OUTPUT_PREFIX
from tests.activities.conftest import RecordingEnvironment, ready_raycluster
from tests.activities.test_serve_drain import serving_cluster
from wire.dashboard import DashboardTarget, RayJobKey
from wire.drain import CloseServeConnections, ServeConnectionsClosing

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


@pytest.mark.parametrize(
    ("logs", "expected"),
    [
        (f"{UNSUPPORTED_MARKER}Ray 2.61.0 uvicorn 0.54.0\n", "Ray 2.61.0, uvicorn 0.54.0"),
        (f"{UNSUPPORTED_MARKER}Ray 2.60.0 uvicorn missing\n", "Ray 2.60.0, uvicorn missing"),
        (f"{CLOSING_MARKER}2\n", None),
        ("", None),
    ],
)
def test_parse_unsupported_output(logs: str, expected: str | None) -> None:
    assert parse_unsupported_output(logs) == expected


@pytest.mark.parametrize(
    ("succeeded", "logs", "expected"),
    [
        (True, f"{CLOSING_MARKER}2\n", ServeConnectionsClosing(2)),
        (True, f"{CLOSING_MARKER}0\n", None),  # reached no server: the job's failure says why
        (False, f"{CLOSING_MARKER}2\n", None),
        (False, "Traceback (most recent call last):\n", None),
        (
            True,
            f"{UNSUPPORTED_MARKER}Ray 2.61.0 uvicorn 0.54.0\n",
            ServeConnectionsClosing(
                0,
                "unsupported Ray 2.61.0, uvicorn 0.54.0: the connection-closing job changes nothing, tested "
                "on Ray 2.60 with uvicorn 0.54",
            ),
        ),
    ],
)
def test_closing_answer_table(succeeded: bool, logs: str, expected: ServeConnectionsClosing | None) -> None:
    assert closing_answer(succeeded, logs) == expected


def test_the_ray_and_uvicorn_in_use_are_releases_the_closing_job_was_tested_on() -> None:
    """A Ray (or uvicorn) upgrade fails here until the real Ray Serve test passed on it and it was added."""
    assert release_series(version("ray")) in TESTED_RAY
    assert release_series(version("uvicorn")) in TESTED_UVICORN


def run_driver_on(stand_ins: Path, ray_version: str, uvicorn_version: str | None) -> str:
    """Runs the driver with stand-in `ray` and `uvicorn` modules of these versions (None: uvicorn not
    importable) ahead of the real ones; `ray.init` prints and exits: past the version check the driver
    connects first."""
    ray = stand_ins / "ray"
    ray.mkdir()
    (ray / "__init__.py").write_text(
        f"__version__ = {ray_version!r}\n"
        "def init(**options):\n"
        "    print('ray.init called')\n"
        "    raise SystemExit(3)\n"
    )
    constants = ray / "serve" / "_private"
    constants.mkdir(parents=True)
    (ray / "serve" / "__init__.py").write_text("")
    (constants / "__init__.py").write_text("")
    (constants / "constants.py").write_text("SERVE_NAMESPACE = 'serve'\nSERVE_PROXY_NAME = 'SERVE_PROXY'\n")
    uvicorn = "raise ImportError('No module named uvicorn')" if uvicorn_version is None else None
    (stand_ins / "uvicorn.py").write_text(uvicorn or f"__version__ = {uvicorn_version!r}\n")
    words = shlex.split(close_connections_entrypoint(60))
    environment = {**os.environ, "PYTHONPATH": str(stand_ins)}
    done = subprocess.run(
        [sys.executable, *words[1:]], env=environment, capture_output=True, text=True, timeout=60
    )
    return f"{done.returncode} {done.stdout}"


@pytest.mark.parametrize(
    ("ray_version", "uvicorn_version", "found"),
    [
        ("2.61.0", "0.54.0", "Ray 2.61.0, uvicorn 0.54.0"),
        ("2.59.1", "0.54.0", "Ray 2.59.1, uvicorn 0.54.0"),
        ("2.60.0", "0.55.0", "Ray 2.60.0, uvicorn 0.55.0"),
        ("2.60.0", None, "Ray 2.60.0, uvicorn missing"),
    ],
)
def test_on_an_untested_release_the_driver_only_reports_it(
    tmp_path: Path, ray_version: str, uvicorn_version: str | None, found: str
) -> None:
    output = run_driver_on(tmp_path, ray_version, uvicorn_version)
    assert output.startswith("0 ")  # the job succeeds: nothing to retry
    assert "ray.init called" not in output  # it never connected, so it reached no proxy
    assert parse_unsupported_output(output.split(" ", 1)[1]) == found


def test_on_a_tested_release_the_driver_goes_on_to_the_proxies(tmp_path: Path) -> None:
    output = run_driver_on(tmp_path, "2.60.3", "0.54.1")
    assert output == "3 ray.init called\n"


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
