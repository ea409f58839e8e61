"""Fixtures for the sandbox network tests: tiny aiohttp backends standing in for pods on 127.0.3.x."""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import aiohttp
import pytest
from aiohttp import web

from sandbox.store import Store


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
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        self.port = int(server.sockets[0].getsockname()[1])

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


async def wait_until(condition: Callable[[], bool | Awaitable[bool]], within: float = 5.0) -> None:
    """Polls `condition` until it holds, failing the test after `within` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(0.02)


@pytest.fixture
def eventually() -> Callable[..., Awaitable[None]]:
    return wait_until


def pod_manifest(
    name: str,
    ip: str | None,
    labels: dict[str, str],
    *,
    ports: dict[str, int] | None = None,
    ready: bool = True,
    namespace: str = "default",
) -> dict[str, object]:
    """A pod as the sandbox's pod-creating controllers record it: Running with an IP, Ready or not."""
    status: dict[str, object] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if ip is not None:
        status["podIP"] = ip
    container_ports = [{"name": n, "containerPort": p} for n, p in (ports or {}).items()]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "ray-head", "image": "x", "ports": container_ports}]},
        "status": status,
    }


@pytest.fixture
def make_pod() -> Callable[..., dict[str, object]]:
    return pod_manifest


@pytest.fixture
def store() -> Iterator[Store]:
    the_store = Store()
    yield the_store
    the_store.close()


def _port_free(address: str, port: int = 8000) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


@pytest.fixture
def free_cluster_ip() -> Callable[[], str]:
    """Explicit clusterIPs far from the start of the pool, whose Service port no other sandbox on this machine
    (another test worker's) holds right now."""
    used: set[str] = set()

    def pick() -> str:
        while (address := f"127.0.1.{random.randrange(120, 250)}") in used or not _port_free(address):
            pass
        used.add(address)
        return address

    return pick
