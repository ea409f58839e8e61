"""`python worker.py` against a real dev server: registers the search attributes, serves metrics, and stops
cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from raypilot.search_attributes import missing_search_attributes
from raypilot.testing.binaries import temporal_cli
from sandbox.realkube.controlplane import free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.devserver, pytest.mark.slow]


@pytest.fixture
async def bare_dev_server() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server on which nobody registered raypilot's search attributes."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(),
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
    )
    try:
        yield env
    finally:
        await env.shutdown()


async def wait_until(check: object, patience: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + patience
    while True:
        result = await check()  # type: ignore[operator]
        if result:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.2)


async def test_worker_registers_search_attributes_and_stops_cleanly(
    bare_dev_server: WorkflowEnvironment,
) -> None:
    client = bare_dev_server.client
    assert set(await missing_search_attributes(client, "default")) == {
        "RayKind",
        "RayNamespace",
        "RayName",
        "RayPhase",
        "RayCronJob",
    }

    metrics_port = free_port()
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": "default",
        "RAYPILOT_TASK_QUEUE": "worker-process-test",
        "RAYPILOT_METRICS_PORT": f"127.0.0.1:{metrics_port}",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(REPO / "worker.py"),
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:

        async def registered() -> bool:
            return not await missing_search_attributes(client, "default")

        await wait_until(registered)

        async def metrics_served() -> bool:
            try:
                async with httpx.AsyncClient() as http:
                    response = await http.get(f"http://127.0.0.1:{metrics_port}/metrics")
            except httpx.TransportError:
                return False
            return response.status_code == 200

        await wait_until(metrics_served)
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    output = (await process.stdout.read()).decode() if process.stdout else ""
    assert code == 0, output
    assert "worker started" in output
    assert "shutting down" in output
