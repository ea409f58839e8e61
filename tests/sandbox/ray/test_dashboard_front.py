"""The dashboard front of a real head: transparent, except that it pins Serve's address in a PUT."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from sandbox.ray.ports import release_ports, reserve_ports
from sandbox.ray.real_front import DashboardFront, pin_serve_addresses

PINNED = {"host": "127.0.3.9", "http_port": 20080, "grpc_port": 20090}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"applications": []},
            {
                "applications": [],
                "http_options": {"host": "127.0.3.9", "port": 20080},
                "grpc_options": {"port": 20090},
            },
        ),
        (
            {"http_options": {"host": "0.0.0.0", "port": 8000, "root_path": "/r"}, "applications": []},
            {
                "http_options": {"host": "127.0.3.9", "port": 20080, "root_path": "/r"},
                "applications": [],
                "grpc_options": {"port": 20090},
            },
        ),
        (
            {"grpc_options": {"port": 9000, "grpc_servicer_functions": ["a.b"]}, "applications": []},
            {
                "grpc_options": {"port": 20090, "grpc_servicer_functions": ["a.b"]},
                "applications": [],
                "http_options": {"host": "127.0.3.9", "port": 20080},
            },
        ),
    ],
)
def test_pin_serve_addresses(body: dict[str, Any], expected: dict[str, Any]) -> None:
    assert json.loads(pin_serve_addresses(json.dumps(body).encode(), **PINNED)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'{"http_options": "weird"}', b""])
def test_bodies_ray_must_reject_pass_unchanged(raw: bytes) -> None:
    assert pin_serve_addresses(raw, **PINNED) == raw  # type: ignore[arg-type]


class Upstream:
    """A stand-in dashboard that records what reached it."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def echo(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.seen.append(
            {
                "method": request.method,
                "path": request.raw_path,
                "headers": dict(request.headers),
                "body": body,
            }
        )
        return web.Response(status=207, body=b"upstream:" + body, headers={"X-Upstream": "yes"})

    async def tail(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["job"] == "missing":
            return web.Response(status=404, text="Job missing does not exist")
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        for chunk in ("line 1\n", "line 2\n"):
            await socket.send_str(chunk)
        await socket.close()
        return socket


@pytest.fixture
async def front() -> AsyncIterator[tuple[str, Upstream]]:
    upstream = Upstream()
    app = web.Application()
    app.router.add_get("/api/jobs/{job}/logs/tail", upstream.tail)
    app.router.add_route("*", "/{tail:.*}", upstream.echo)
    upstream_port, front_port, serve_port, grpc_port = reserve_ports(4)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", upstream_port).start()
    proxy = DashboardFront(
        listen_host="127.0.0.1",
        listen_port=front_port,
        upstream=f"http://127.0.0.1:{upstream_port}",
        serve_http_port=serve_port,
        serve_grpc_port=grpc_port,
    )
    await proxy.start()
    yield f"http://127.0.0.1:{front_port}", upstream
    await proxy.stop()
    await runner.cleanup()
    release_ports([upstream_port, front_port, serve_port, grpc_port])


async def test_requests_pass_through_with_the_callers_headers(front: tuple[str, Upstream]) -> None:
    url, upstream = front
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{url}/api/jobs/?x=1",
            data=b'{"entrypoint": "echo"}',
            headers={"Authorization": "Bearer t", "User-Agent": "Mozilla/5.0", "Origin": "http://evil"},
        ) as response:
            assert response.status == 207
            assert response.headers["X-Upstream"] == "yes"
            assert await response.read() == b'upstream:{"entrypoint": "echo"}'
        async with session.get(f"{url}/api/version", skip_auto_headers={"User-Agent"}) as response:
            assert response.status == 207
    first, second = upstream.seen
    assert first["path"] == "/api/jobs/?x=1"
    assert first["headers"]["Authorization"] == "Bearer t"
    assert first["headers"]["User-Agent"] == "Mozilla/5.0"  # the browser guard must see the caller's agent
    assert first["headers"]["Origin"] == "http://evil"
    assert "User-Agent" not in second["headers"]  # and no agent of the front's own


async def test_a_serve_put_is_pinned_to_the_heads_serve_port(front: tuple[str, Upstream]) -> None:
    url, upstream = front
    async with (
        aiohttp.ClientSession() as session,
        session.put(f"{url}/api/serve/applications/", json={"applications": []}) as response,
    ):
        assert response.status == 207
    body = json.loads(upstream.seen[0]["body"])
    assert body["http_options"]["host"] == "127.0.0.1"
    assert body["http_options"]["port"] != 8000


async def test_websocket_log_tailing_passes_through(front: tuple[str, Upstream]) -> None:
    url, _ = front
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"{url}/api/jobs/j1/logs/tail") as socket:
            chunks = [message.data async for message in socket]
        assert chunks == ["line 1\n", "line 2\n"]
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(f"{url}/api/jobs/missing/logs/tail")
        assert refused.value.status == 404
