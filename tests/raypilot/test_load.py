"""SteadyLoad against a local HTTP server: versions counted, failures classified, waiting on a count."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from raypilot.load import FAILED, SteadyLoad, share
from tests.local_http import local_http


@asynccontextmanager
async def local_server(answer: Callable[[web.Request], Awaitable[web.Response]]) -> AsyncIterator[str]:
    """Serves `answer` at / on a free local port; gives its URL."""
    async with local_http("/", answer) as address:
        yield f"http://{address}/"


@pytest.fixture
async def server() -> AsyncIterator[str]:
    calls = {"n": 0}

    async def answer(_: web.Request) -> web.Response:
        calls["n"] += 1
        if calls["n"] % 10 == 0:
            return web.Response(status=503)
        return web.json_response({"version": "v1" if calls["n"] % 2 else "v2"})

    async with local_server(answer) as url:
        yield url


async def test_counts_versions_and_failures(server: str) -> None:
    async with SteadyLoad(server, concurrency=2) as load:
        await load.wait_for_requests(100)
    counts = load.counts()
    assert sum(counts.values()) == len(load.samples) >= 100
    assert counts[FAILED] == len(load.failures) > 0
    assert all(sample.detail == "HTTP 503" for sample in load.failures)
    assert {"v1", "v2"} <= set(counts)


async def test_unreachable_endpoint_is_a_failure() -> None:
    async with SteadyLoad("http://127.0.0.1:9/", concurrency=1, timeout_s=1.0) as load:
        await load.wait_for_requests(3)
    assert load.counts()[FAILED] == len(load.samples)
    # The operating system's word for it, which httpx's message leaves out.
    assert all(sample.detail.endswith("(ECONNREFUSED)") for sample in load.samples), load.samples


@pytest.mark.parametrize(("keep_alive", "fewer_connections_than_requests"), [(True, True), (False, False)])
async def test_keep_alive_off_opens_a_connection_per_request(
    keep_alive: bool, fewer_connections_than_requests: bool
) -> None:
    # One transport per accepted connection, held so no two can share an identity. The client's
    # port is no such key: once the server has closed a connection the kernel may hand the same
    # ephemeral port to the next one.
    connections: set[asyncio.BaseTransport] = set()

    async def answer(request: web.Request) -> web.Response:
        assert request.transport is not None
        connections.add(request.transport)
        return web.json_response({"version": "v1"})

    async with local_server(answer) as url, SteadyLoad(url, concurrency=2, keep_alive=keep_alive) as load:
        await load.wait_for_requests(40)
    assert load.counts() == {"v1": len(load.samples)}
    assert (len(connections) < len(load.samples)) is fewer_connections_than_requests


async def test_pause_bounds_the_rate(server: str) -> None:
    async with SteadyLoad(server, concurrency=1, pause_s=0.05) as load:
        await asyncio.sleep(0.5)
    assert 3 <= len(load.samples) <= 11


@pytest.mark.parametrize(
    ("counts", "version", "expected"),
    [
        (Counter({"v1": 30, "v2": 70}), "v2", 70.0),
        (Counter({"v1": 30, "v2": 70, FAILED: 100}), "v1", 30.0),
        (Counter(), "v1", 0.0),
    ],
)
def test_share_ignores_failures(counts: Counter[str], version: str, expected: float) -> None:
    assert share(counts, version) == expected
