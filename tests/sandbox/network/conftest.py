"""Fixtures for the sandbox network tests: tiny aiohttp backends standing in for pods on 127.0.3.x."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web

from sandbox.proxy import WeightedHttpProxy


async def serve(app: web.Application, host: str) -> tuple[web.AppRunner, int]:
    """Starts `app` on `host` at a free port; the runner (to clean up) and the port."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    server = site._server
    assert isinstance(server, asyncio.Server)
    return runner, int(server.sockets[0].getsockname()[1])


async def in_chunks(payload: bytes, size: int = 100_000) -> AsyncIterator[bytes]:
    """A streamed request body: `payload` sent `size` bytes at a time."""
    for start in range(0, len(payload), size):
        yield payload[start : start + size]


class Backend:
    """An HTTP server that answers with its name, can hold a streaming response open, and echoes bodies."""

    def __init__(self, name: str, host: str) -> None:
        self.name = name
        self.host = host
        self.port = 0
        self.release_stream = asyncio.Event()
        self.stream_started = asyncio.Event()
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/stream", self._stream)
        app.router.add_post("/echo", self._echo)
        app.router.add_route("*", "/{tail:.*}", self._name)
        self._runner, self.port = await serve(app, self.host)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _name(self, request: web.Request) -> web.Response:
        return web.Response(text=f"{self.name} {request.path_qs}")

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        """Sends one chunk, waits for `release_stream`, then sends the rest."""
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(f"{self.name}:first;".encode())
        self.stream_started.set()
        await self.release_stream.wait()
        for index in range(3):
            await response.write(f"{self.name}:{index};".encode())
        await response.write_eof()
        return response

    async def _echo(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        async for chunk in request.content.iter_chunked(4096):
            await response.write(chunk)
        await response.write_eof()
        return response


BackendFactory = Callable[..., Awaitable[Backend]]


@pytest.fixture
async def make_backend() -> AsyncIterator[BackendFactory]:
    started: list[Backend] = []
    counter = iter(range(100, 254))

    async def make(name: str, host: str | None = None) -> Backend:
        backend = Backend(name, host or f"127.0.3.{next(counter)}")
        await backend.start()
        started.append(backend)
        return backend

    yield make
    for backend in started:
        backend.release_stream.set()
        await backend.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        yield session


@pytest.fixture
async def proxy() -> AsyncIterator[WeightedHttpProxy]:
    weighted = WeightedHttpProxy("127.0.0.1", 0)
    await weighted.start()
    yield weighted
    await weighted.stop()
