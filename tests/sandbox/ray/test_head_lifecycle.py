"""Starting, restarting (fault injection) and stopping heads; a real head's processes are gone by PID."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from sandbox.ray.processes import session_members
from sandbox.ray.real import RayHeadStartError, RealRayHead, remove_orphaned_temp_dir
from sandbox.ray.simulated import SIMULATION_COUNTERS_PATH, SimulatedDashboard
from sandbox.ray.simulated_timings import SimulationTimings
from tests.sandbox.ray.conftest import eventually


async def session_name(url: str) -> str:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"{url}/api/version")
    assert response.status_code == 200, response.text
    name: str = response.json()["session_name"]
    return name


async def port_closed(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=2) as client:
            await client.get(f"{url}/api/version")
    except httpx.TransportError:
        return True
    return False


async def test_a_simulated_restart_loses_jobs_and_keeps_ports() -> None:
    head = SimulatedDashboard("lifecycle", {}, {}, timings=SimulationTimings.fast())
    await head.start()
    ports = head.ports
    assert head.pids == []
    first_session = await session_name(head.dashboard_url)
    async with httpx.AsyncClient(base_url=head.dashboard_url) as client:
        submitted = await client.post("/api/jobs/", json={"entrypoint": "sleep 60", "submission_id": "j"})
        assert submitted.status_code == 200
        await head.restart()
        assert (await client.get("/api/jobs/j")).status_code == 404
    assert head.ports == ports
    assert await session_name(head.dashboard_url) != first_session
    await head.stop()
    assert await port_closed(head.dashboard_url)


@pytest.fixture
async def counted_head() -> AsyncIterator[SimulatedDashboard]:
    """A started simulated head, for the tests of what it counts; stopped after the test."""
    head = SimulatedDashboard("counted", {}, {}, timings=SimulationTimings.fast())
    await head.start()
    try:
        yield head
    finally:
        await head.stop()


async def submit_and_read(client: httpx.AsyncClient, entrypoint: str, reads: int) -> None:
    """Submits job "j" running `entrypoint`, then reads its info `reads` times."""
    await client.post("/api/jobs/", json={"entrypoint": entrypoint, "submission_id": "j"})
    for _ in range(reads):
        await client.get("/api/jobs/j")


async def test_a_simulated_head_exports_its_dashboard_requests_as_ray_counts_them(
    counted_head: SimulatedDashboard,
) -> None:
    head = counted_head
    async with httpx.AsyncClient(base_url=head.dashboard_url) as client:
        await submit_and_read(client, "true", 3)
        text = (await client.get(f"http://{head.host}:{head.ports['metrics']}/metrics")).text
    counter = "ray_dashboard_api_requests_count_requests_total"
    assert f'{counter}{{Component="dashboard",endpoint="/api/jobs/{{job_id}}",method="GET"}} 3.0' in text
    assert f'{counter}{{Component="dashboard",endpoint="/api/jobs/",method="POST"}} 1.0' in text


async def test_a_simulated_head_counts_its_requests_per_route_and_path_and_its_jobs_per_state(
    counted_head: SimulatedDashboard,
) -> None:
    head = counted_head
    counters_url = f"http://{head.host}:{head.ports['metrics']}{SIMULATION_COUNTERS_PATH}"
    async with httpx.AsyncClient(base_url=head.dashboard_url) as client:
        await submit_and_read(client, "sleep 60", 2)
        await client.get("/api/jobs/")
        counters = (await client.get(counters_url)).json()
        again = (await client.get(counters_url)).json()
    assert counters["routes"] == {"POST /api/jobs/": 1, "GET /api/jobs/{job_id}": 2, "GET /api/jobs/": 1}
    assert counters["paths"] == {"POST /api/jobs/": 1, "GET /api/jobs/j": 2, "GET /api/jobs/": 1}
    assert sum(counters["jobStates"].values()) == 1, counters
    assert again["routes"] == counters["routes"]  # reading the counters is no dashboard request


async def test_a_simulated_head_counts_the_serve_requests_its_app_answered_per_version() -> None:
    """Only application requests count, by the version that answered (the probes' /-/healthz and /-/routes
    do not): what a test reads to know how many requests reached one cluster."""
    head = SimulatedDashboard("answers", {"APP_VERSION": "v7"}, {}, timings=SimulationTimings.fast())
    await head.start()
    try:
        counters_url = f"http://{head.host}:{head.ports['metrics']}{SIMULATION_COUNTERS_PATH}"
        serve_url = f"http://{head.host}:{head.ports['serve']}"
        app = {"name": "app", "route_prefix": "/", "import_path": "sandbox.apps.versioned:app"}
        async with httpx.AsyncClient(timeout=30.0) as client:
            assert (await client.get(counters_url)).json()["serveAnswers"] == {}
            put = await client.put(
                f"{head.dashboard_url}/api/serve/applications/", json={"applications": [app]}
            )
            assert put.status_code == 200, put.text

            async def running() -> bool:
                details = (await client.get(f"{head.dashboard_url}/api/serve/applications/")).json()
                return bool((details["applications"].get("app") or {}).get("status") == "RUNNING")

            await eventually(running, timeout_s=30)
            versions = [(await client.get(f"{serve_url}/any/path")).json()["version"] for _ in range(5)]
            assert (await client.get(f"{serve_url}/-/healthz")).status_code == 200
            assert (await client.get(f"{serve_url}/-/routes")).status_code == 200
            counters = (await client.get(counters_url)).json()
    finally:
        await head.stop()
    assert versions == ["v7"] * 5
    assert counters["serveAnswers"] == {"v7": 5}


@pytest.mark.ray
async def test_a_real_head_starts_restarts_and_stops_by_pid(tmp_path: Path) -> None:
    head = RealRayHead("lifecycle", tmp_path / "head", {}, {"num-cpus": "1", "dashboard-host": "0.0.0.0"})
    assert head.ignored_params == ("dashboard-host",)
    ports = head.ports
    assert set(ports) == {"dashboard", "serve", "client", "gcs-server", "metrics"}
    assert len(set(ports.values())) == len(ports)
    await head.start()
    try:
        first_session = await session_name(head.dashboard_url)  # no token needed: auth is off by default
        first_pids = head.pids
        assert len(first_pids) > 5  # gcs_server, raylet, dashboard and its modules, agents...
        temp_dir = head.temp_dir
        assert temp_dir is not None
        assert temp_dir.is_dir()
        assert len(str(temp_dir)) < 40  # Ray's unix socket paths must stay short
        assert (tmp_path / "head" / "ray-temp").resolve() == temp_dir.resolve()

        await head.restart()
        assert head.ports == ports
        assert await session_name(head.dashboard_url) != first_session
        assert not set(first_pids) & set(head.pids)
        assert not temp_dir.exists()

        # A running job puts Ray workers (supervisor actor, entrypoint) in process groups of their own.
        async with httpx.AsyncClient(base_url=head.dashboard_url, timeout=30) as client:
            await client.post("/api/jobs/", json={"entrypoint": "sleep 60", "submission_id": "worker"})
            await eventually(lambda: _job_running(client, "worker"))
        session = os.getsid(head.pids[0])
        assert len({os.getpgid(pid) for pid in head.pids}) > 1
    finally:
        await head.stop()
    assert head.pids == []
    assert session_members(session) == []  # the workers in their own process groups included
    assert head.temp_dir is None
    assert not (tmp_path / "head" / "ray-temp").exists()
    assert await port_closed(head.dashboard_url)


@pytest.mark.ray
async def test_a_head_that_cannot_start_reports_its_log(tmp_path: Path) -> None:
    head = RealRayHead("broken", tmp_path / "broken", {}, {"num-cpus": "lots"}, start_timeout_s=60)
    with pytest.raises(RayHeadStartError, match="num-cpus"):
        await head.start()
    assert head.pids == []
    await head.stop()


async def _job_running(client: httpx.AsyncClient, submission_id: str) -> bool:
    return bool((await client.get(f"/api/jobs/{submission_id}")).json()["status"] == "RUNNING")


def test_an_orphaned_temp_dir_is_found_through_the_workdir_link(tmp_path: Path) -> None:
    orphan = tmp_path / "rp-abc123"
    (orphan / "session_latest").mkdir(parents=True)
    workdir = tmp_path / "head"
    workdir.mkdir()
    (workdir / "ray-temp").symlink_to(orphan)
    remove_orphaned_temp_dir(workdir)
    assert not orphan.exists()
    assert not (workdir / "ray-temp").exists()
    remove_orphaned_temp_dir(workdir)  # nothing left: a no-op


def test_only_ray_temp_dirs_are_removed(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (tmp_path / "ray-temp").symlink_to(precious)
    remove_orphaned_temp_dir(tmp_path)
    assert precious.is_dir()
    assert not (tmp_path / "ray-temp").is_symlink()
