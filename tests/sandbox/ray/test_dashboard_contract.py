"""The Ray Dashboard contract (reference A): every test runs against a real Ray 2.60 head and against the
simulated dashboard, so the simulation stays honest. Both heads have token auth on."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from tests.sandbox.ray.conftest import Dashboard, eventually

TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
SERVE = "/api/serve/applications/"
EMPTY_SERVE = {"controller_info": {}, "proxies": {}, "applications": {}, "target_capacity": None}


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def submit(client: httpx.AsyncClient, entrypoint: str, submission_id: str) -> None:
    response = await client.post(
        "/api/jobs/", json={"entrypoint": entrypoint, "submission_id": submission_id}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"job_id": submission_id, "submission_id": submission_id}


async def job_in(client: httpx.AsyncClient, submission_id: str, states: set[str]) -> dict[str, Any] | None:
    job: dict[str, Any] = (await client.get(f"/api/jobs/{submission_id}")).json()
    return job if job["status"] in states else None


async def finished_job(
    dashboard: Dashboard, entrypoint: str, submission_id: str
) -> tuple[dict[str, Any], str]:
    """Submits `entrypoint` and waits until the job ends: (its job info, its logs)."""
    async with dashboard.client() as client:
        await submit(client, entrypoint, submission_id)
        job = await eventually(lambda: job_in(client, submission_id, TERMINAL))
        logs: str = (await client.get(f"/api/jobs/{submission_id}/logs")).json()["logs"]
    return job, logs


# --- transport: version, health, token auth, browser guard ---------------------------------------------


async def test_version(dashboard: Dashboard) -> None:
    async with dashboard.client() as client:
        response = await client.get("/api/version")
    assert response.status_code == 200
    body = response.json()
    assert (body["version"], body["ray_version"]) == ("4", "2.60.0")
    assert body["session_name"].startswith("session_")


async def test_gcs_health_needs_no_token(dashboard: Dashboard) -> None:
    async with dashboard.client(authenticated=False) as client:
        response = await client.get("/api/gcs_healthz")
    assert (response.status_code, response.text) == (200, "success")


async def test_token_auth(dashboard: Dashboard) -> None:
    async with dashboard.client(authenticated=False) as client:
        missing = await client.get("/api/version")
        wrong = await client.get("/api/version", headers={"Authorization": "Bearer wrong-token"})
        kuberay_header = await client.get(
            "/api/jobs/", headers={"X-Ray-Authorization": f"Bearer {dashboard.token}"}
        )
    assert (missing.status_code, missing.text) == (401, "Unauthorized: Missing authentication token")
    assert wrong.status_code == 403
    assert kuberay_header.status_code == 200


async def test_browser_guard(dashboard: Dashboard) -> None:
    async with dashboard.client() as client:
        put = await client.put(SERVE, json={"applications": []}, headers={"Origin": "http://localhost:3000"})
        post = await client.post(
            "/api/jobs/", json={"entrypoint": "echo"}, headers={"User-Agent": "Mozilla/5.0"}
        )
        get = await client.get("/api/jobs/", headers={"User-Agent": "Mozilla/5.0"})
    assert (put.status_code, put.text) == (405, "'PUT' method not allowed for browser traffic.")
    assert (post.status_code, post.text) == (405, "'POST' method not allowed for browser traffic.")
    assert get.status_code == 200


# --- Jobs -----------------------------------------------------------------------------------------------


async def test_failing_entrypoint(dashboard: Dashboard) -> None:
    submission_id = new_id("fail")
    job, logs = await finished_job(dashboard, "echo hello; exit 3", submission_id)
    assert job["status"] == "FAILED"
    assert job["error_type"] == "JOB_ENTRYPOINT_COMMAND_ERROR"
    assert job["driver_exit_code"] == 3
    assert job["message"].startswith("Job entrypoint command failed with exit code 3, last available logs")
    assert "hello" in job["message"]
    assert (job["type"], job["job_id"], job["entrypoint"]) == ("SUBMISSION", None, "echo hello; exit 3")
    assert job["start_time"] > 1_600_000_000_000  # milliseconds
    assert job["end_time"] >= job["start_time"]
    assert "hello\n" in logs
    assert f"Running entrypoint for job {submission_id}: echo hello; exit 3" in logs


async def test_succeeding_python_entrypoint(dashboard: Dashboard) -> None:
    job, logs = await finished_job(dashboard, "python -c \"print('from python')\"", new_id("ok"))
    assert (job["status"], job["message"], job["driver_exit_code"]) == (
        "SUCCEEDED",
        "Job finished successfully.",
        0,
    )
    assert job["error_type"] is None
    assert "from python\n" in logs


async def test_duplicate_submission_id(dashboard: Dashboard) -> None:
    submission_id = new_id("dup")
    async with dashboard.client() as client:
        await submit(client, "echo once", submission_id)
        again = await client.post(
            "/api/jobs/", json={"entrypoint": "echo twice", "submission_id": submission_id}
        )
        await eventually(lambda: job_in(client, submission_id, TERMINAL))
    assert again.status_code == 500
    assert (
        f"Job with submission_id {submission_id} already exists. Please use a different submission_id."
        in again.text
    )


async def test_generated_submission_id_and_listing(dashboard: Dashboard) -> None:
    async with dashboard.client() as client:
        response = await client.post(
            "/api/jobs/", json={"entrypoint": "echo generated", "metadata": {"k": "v"}}
        )
        submission_id = response.json()["submission_id"]
        listed = (await client.get("/api/jobs/")).json()
        await eventually(lambda: job_in(client, submission_id, TERMINAL))
    assert re.fullmatch(r"raysubmit_[A-Za-z0-9]{16}", submission_id)
    assert isinstance(listed, list)
    [ours] = [job for job in listed if job["submission_id"] == submission_id]
    assert (ours["type"], ours["metadata"]) == ("SUBMISSION", {"k": "v"})


async def test_malformed_submission_is_400(dashboard: Dashboard) -> None:
    async with dashboard.client() as client:
        no_entrypoint = await client.post("/api/jobs/", json={"submission_id": new_id("bad")})
        wrong_type = await client.post("/api/jobs/", json={"entrypoint": 5})
    assert no_entrypoint.status_code == 400
    assert "missing 1 required positional argument: 'entrypoint'" in no_entrypoint.text
    assert wrong_type.status_code == 400


async def test_stop_and_delete(dashboard: Dashboard) -> None:
    submission_id = new_id("stop")
    async with dashboard.client() as client:
        await submit(client, "sleep 30", submission_id)
        await eventually(lambda: job_in(client, submission_id, {"RUNNING"}))
        early_delete = await client.delete(f"/api/jobs/{submission_id}")
        stop = await client.post(f"/api/jobs/{submission_id}/stop")
        job = await eventually(lambda: job_in(client, submission_id, TERMINAL))
        stop_again = await client.post(f"/api/jobs/{submission_id}/stop")
        delete = await client.delete(f"/api/jobs/{submission_id}")

        async def deleted() -> httpx.Response | None:
            # Real Ray may still answer for the job for a while after DELETE returned: over 10 s once, in a
            # full run on a loaded machine.
            answer = await client.get(f"/api/jobs/{submission_id}")
            return answer if answer.status_code == 404 else None

        gone = await eventually(deleted, timeout_s=30)
    assert early_delete.status_code == 500
    assert re.search(
        rf"Attempted to delete job '{submission_id}', but it is in a non-terminal state", early_delete.text
    )
    assert stop.json() == {"stopped": True}
    assert (job["status"], job["message"], job["driver_exit_code"]) == (
        "STOPPED",
        "Job was intentionally stopped.",
        None,
    )
    assert job["end_time"] >= job["start_time"]
    assert stop_again.json() == {"stopped": False}
    assert delete.json() == {"deleted": True}
    assert (gone.status_code, gone.text) == (404, f"Job {submission_id} does not exist")


@pytest.mark.parametrize(
    ("method", "suffix"), [("GET", ""), ("POST", "/stop"), ("DELETE", ""), ("GET", "/logs")]
)
async def test_unknown_job_is_404(dashboard: Dashboard, method: str, suffix: str) -> None:
    async with dashboard.client() as client:
        response = await client.request(method, f"/api/jobs/no-such-job{suffix}")
    assert (response.status_code, response.text) == (404, "Job no-such-job does not exist")


async def test_log_tail_websocket_streams_until_the_job_ends(dashboard: Dashboard) -> None:
    submission_id = new_id("tail")
    async with dashboard.client() as client:
        await submit(client, "echo first; sleep 1; echo second", submission_id)
        async with (
            aiohttp.ClientSession(headers=dashboard.auth) as session,
            session.ws_connect(f"{dashboard.url}/api/jobs/{submission_id}/logs/tail") as socket,
        ):
            streamed = "".join(
                [message.data async for message in socket if message.type == aiohttp.WSMsgType.TEXT]
            )
        job = (await client.get(f"/api/jobs/{submission_id}")).json()
    assert "first\n" in streamed
    assert "second\n" in streamed
    assert job["status"] == "SUCCEEDED"


async def test_ray_job_submit_cli_waits_for_the_job_and_reports_its_failure(dashboard: Dashboard) -> None:
    """What a K8sJobMode submitter runs: the real `ray job submit` CLI (HTTP plus log-tailing WebSocket)."""
    submission_id = new_id("cli")
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": dashboard.token})
    command = [str(Path(sys.executable).parent / "ray"), "job", "submit", "--address", dashboard.url]
    cli = await asyncio.create_subprocess_exec(
        *command,
        "--submission-id",
        submission_id,
        "--",
        "sh",
        "-c",
        "echo hi from cli; exit 3",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(cli.communicate(), 120)
    text = output.decode(errors="replace")
    assert cli.returncode == 1, text
    assert "hi from cli" in text
    assert f"Job '{submission_id}' failed" in text


# --- Serve ----------------------------------------------------------------------------------------------


def versioned_app(**deployment: Any) -> dict[str, Any]:
    return {
        "name": "app1",
        "route_prefix": "/a",
        "import_path": "sandbox.apps.versioned:app",
        "deployments": [{"name": "Versioned", "ray_actor_options": {"num_cpus": 0.1}, **deployment}],
    }


BROKEN_APP = {"name": "broken", "route_prefix": "/b", "import_path": "nonexistent.module:app"}


async def serve_details(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get(SERVE, params={"api_type": "declarative"})
    assert response.status_code == 200, response.text
    details: dict[str, Any] = response.json()
    return details


def settled_deployment(
    details: dict[str, Any], target: int, trigger: str | None = None
) -> dict[str, Any] | None:
    app = details["applications"].get("app1")
    if app is None or app["status"] != "RUNNING":
        return None
    deployment: dict[str, Any] = app["deployments"]["Versioned"]
    running = [replica for replica in deployment["replicas"] if replica["state"] == "RUNNING"]
    if deployment["status"] != "HEALTHY" or len(deployment["replicas"]) != target or len(running) != target:
        return None
    if trigger is not None and deployment["status_trigger"] != trigger:
        return None
    return deployment


async def answers(dashboard: Dashboard, count: int) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=dashboard.serve_url, timeout=30.0) as serve:
        return [(await serve.get("/a/anything")).json() for _ in range(count)]


async def replicas_answering(
    dashboard: Dashboard, expected_ranks: set[int]
) -> dict[str, dict[str, Any]] | None:
    """Sample the app until every expected rank answered; returns replica id -> last answer."""
    by_replica = {answer["replica"]: answer for answer in await answers(dashboard, 4 * len(expected_ranks))}
    return by_replica if {answer["rank"] for answer in by_replica.values()} == expected_ranks else None


async def test_serve_rejects_a_bad_config_with_400(dashboard: Dashboard) -> None:
    async with dashboard.client() as client:
        response = await client.put(SERVE, json={"applications": [{"name": "x"}]})
    assert response.status_code == 400
    assert "1 validation error for ServeDeploySchema" in response.text
    assert "applications.0.import_path" in response.text
    assert "Field required" in response.text


async def test_serve_rejects_an_unknown_api_type(dashboard: Dashboard) -> None:
    async with dashboard.client() as client:
        response = await client.get(SERVE, params={"api_type": "bogus"})
    assert (response.status_code, response.text) == (
        400,
        "Invalid 'api_type' value: 'bogus'. Must be one of: imperative, declarative",
    )


async def test_serve_lifecycle(dashboard: Dashboard) -> None:
    """PUT with target_capacity 50 -> half the replicas, ranks 0..N-1, the app answering on the serve port;
    a user_config change in place; capacity 100 -> all replicas; DELETE -> Serve gone."""
    async with dashboard.client() as client:
        assert (await client.delete(SERVE)).status_code == 200
        assert await serve_details(client) == EMPTY_SERVE

        put = await client.put(
            SERVE, json={"target_capacity": 50, "applications": [versioned_app(num_replicas=4), BROKEN_APP]}
        )
        assert (put.status_code, put.text) == (200, "")
        deployment = await eventually(lambda: _settled(client, 2))
        assert deployment["target_num_replicas"] == 2
        details = await serve_details(client)
        assert details["target_capacity"] == 50
        assert details["applications"]["app1"]["route_prefix"] == "/a"
        assert (
            details["applications"]["app1"]["deployed_app_config"]["import_path"]
            == "sandbox.apps.versioned:app"
        )
        broken = await eventually(lambda: _app_status(client, "broken", "DEPLOY_FAILED"))
        assert "ModuleNotFoundError" in broken["message"]
        assert broken["deployments"] == {}

        first = await eventually(lambda: replicas_answering(dashboard, {0, 1}))
        assert {answer["version"] for answer in first.values()} == {"v1"}
        assert {answer["world_size"] for answer in first.values()} == {4}  # configured, not capacity-adjusted
        async with httpx.AsyncClient(base_url=dashboard.serve_url, timeout=30.0) as serve:
            health = await serve.get("/-/healthz")
            routes = await serve.get("/-/routes")
            missing = await serve.get("/nothing")
        assert (health.status_code, health.text) == (200, "success")
        assert routes.json() == {"/a": "app1"}
        assert missing.status_code == 404

        reconfigured = versioned_app(num_replicas=4, user_config={"version": "v2"})
        await client.put(SERVE, json={"target_capacity": 50, "applications": [reconfigured]})
        await eventually(lambda: _all_answer(dashboard, "v2"))
        assert set(await eventually(lambda: replicas_answering(dashboard, {0, 1}))) == set(
            first
        )  # no restart

        await client.put(SERVE, json={"target_capacity": 100, "applications": [reconfigured]})
        scaled = await eventually(lambda: _settled(client, 4, "UPSCALE_COMPLETED"))
        assert scaled["target_num_replicas"] == 4
        assert "broken" not in (await serve_details(client))["applications"]
        await eventually(lambda: replicas_answering(dashboard, {0, 1, 2, 3}))

        assert (await client.delete(SERVE)).status_code == 200
        assert await serve_details(client) == EMPTY_SERVE
        await eventually(lambda: _serve_port_closed(dashboard), timeout_s=30)


async def _settled(
    client: httpx.AsyncClient, target: int, trigger: str | None = None
) -> dict[str, Any] | None:
    return settled_deployment(await serve_details(client), target, trigger)


async def _app_status(client: httpx.AsyncClient, name: str, status: str) -> dict[str, Any] | None:
    app: dict[str, Any] | None = (await serve_details(client))["applications"].get(name)
    return app if app is not None and app["status"] == status else None


async def _all_answer(dashboard: Dashboard, version: str) -> bool:
    return {answer["version"] for answer in await answers(dashboard, 8)} == {version}


async def _serve_port_closed(dashboard: Dashboard) -> bool:
    try:
        async with httpx.AsyncClient(base_url=dashboard.serve_url, timeout=2.0) as serve:
            await serve.get("/-/healthz")
    except httpx.TransportError:
        return True
    return False


async def test_a_request_is_held_until_a_replica_runs(dashboard: Dashboard) -> None:
    """With target_capacity 0 the app has no replica; a request sent then is held by Serve, not failed, and
    answered once target_capacity 100 started one (an incremental upgrade routes traffic to a cluster right
    after its capacity step)."""
    # Serve is not running (test_serve_lifecycle ends with a DELETE); starting it on a real head can take
    # longer than the usual client timeout on a busy machine.
    async with httpx.AsyncClient(base_url=dashboard.url, headers=dashboard.auth, timeout=120.0) as client:
        app = versioned_app(num_replicas=1)
        put = await client.put(SERVE, json={"target_capacity": 0, "applications": [app]})
        assert put.status_code == 200, put.text
        await eventually(lambda: _app_status(client, "app1", "RUNNING"))
        async with httpx.AsyncClient(base_url=dashboard.serve_url, timeout=60.0) as serve:
            held = asyncio.create_task(serve.get("/a/held"))
            await asyncio.sleep(1.0)
            assert not held.done()
            await client.put(SERVE, json={"target_capacity": 100, "applications": [app]})
            answer = await held
        assert answer.status_code == 200, answer.text
        assert answer.json()["version"] == "v1"
        assert (await client.delete(SERVE)).status_code == 200
