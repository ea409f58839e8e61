"""One Ray head per kind ("real" and "simulated") per test module, with token auth on, for the dashboard
contract suite: the same assertions must hold against real Ray 2.60 and against the simulation."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from sandbox.ray.real import RealRayHead
from sandbox.ray.simulated import SimulatedDashboard
from sandbox.ray.simulated_timings import SimulationTimings

T = TypeVar("T")
TOKEN = f"contract-{secrets.token_hex(8)}"


@dataclass
class Dashboard:
    kind: str
    head: RealRayHead | SimulatedDashboard
    token: str

    @property
    def url(self) -> str:
        return self.head.dashboard_url

    @property
    def serve_url(self) -> str:
        return f"http://{self.head.host}:{self.head.ports['serve']}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, *, authenticated: bool = True) -> httpx.AsyncClient:
        """A plain API client (no browser-like headers), with the bearer token unless told otherwise."""
        return httpx.AsyncClient(
            base_url=self.url, headers=self.auth if authenticated else {}, timeout=httpx.Timeout(30.0)
        )


def head_env() -> dict[str, str]:
    # As in a Ray image, `python` in an entrypoint is the interpreter that has Ray.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {"APP_VERSION": "v1", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN, "PATH": path}


@pytest.fixture(scope="module", params=[pytest.param("real", marks=pytest.mark.ray), "simulated"])
async def dashboard(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Dashboard]:
    head: RealRayHead | SimulatedDashboard
    if request.param == "real":
        head = RealRayHead("contract", tmp_path_factory.mktemp("ray-contract"), head_env(), {"num-cpus": "2"})
    else:
        head = SimulatedDashboard("contract", head_env(), {"num-cpus": "2"}, timings=SimulationTimings.fast())
    await head.start()
    try:
        yield Dashboard(kind=request.param, head=head, token=TOKEN)
    finally:
        await head.stop()


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout_s: float = 90.0, every_s: float = 0.2
) -> T:
    """Poll `probe` until it returns something other than None (or False); fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while True:
        last = await probe()
        if last is not None and last is not False:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s (last probe: {last!r})")
        await asyncio.sleep(every_s)
