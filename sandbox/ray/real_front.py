"""An HTTP front for a real Ray dashboard that pins where Ray Serve listens.

Ray 2.60 takes the Serve proxy's address only from `http_options` of the first `PUT /api/serve/applications/`
(the schema default is 0.0.0.0:8000) and has no environment variable for the head's Serve port
(RAY_SERVE_DEFAULT_HTTP_HOST only changes the Python API's default host; RAY_SERVE_WORKER_PROXY_HTTP_PORT
exempts the head). Two heads on one machine would fight over 0.0.0.0:8000. So the dashboard port the sandbox
exposes is this front: every request and WebSocket (job log tailing) passes through unchanged, except that
in a Serve PUT `http_options.host/port` and `grpc_options.port` are replaced by the head's own address and
reserved ports. Ray then reports those values in `GET /api/serve/applications/`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import aiohttp
from aiohttp import web

from sandbox.ray.listening import serve_app

SERVE_APPLICATIONS_PATH = "/api/serve/applications/"
MAX_BODY_BYTES = 200 * 1024 * 1024  # job working_dir packages may be up to ~100 MiB
HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def pin_serve_addresses(body: bytes, *, host: str, http_port: int, grpc_port: int) -> bytes:
    """Return the Serve PUT body with its proxy addresses pinned; bodies that are not a JSON object pass
    unchanged so that Ray answers them with its own 400."""
    try:
        config = json.loads(body)
    except ValueError:
        return body
    if not isinstance(config, dict):
        return body
    http_options = config.get("http_options")
    grpc_options = config.get("grpc_options")
    if http_options is not None and not isinstance(http_options, dict):
        return body
    if grpc_options is not None and not isinstance(grpc_options, dict):
        return body
    config["http_options"] = {**(http_options or {}), "host": host, "port": http_port}
    config["grpc_options"] = {**(grpc_options or {}), "port": grpc_port}
    return json.dumps(config).encode()


def _forwardable(headers: Any) -> dict[str, str]:
    return {key: value for key, value in headers.items() if key.lower() not in HOP_BY_HOP_HEADERS}


class DashboardFront:
    """Listens on `listen_host:listen_port` and forwards to the dashboard at `upstream`."""

    def __init__(
        self, *, listen_host: str, listen_port: int, upstream: str, serve_http_port: int, serve_grpc_port: int
    ) -> None:
        self._listen_host = listen_host
        self._listen_port = listen_port
        self._upstream = upstream.rstrip("/")
        self._serve_http_port = serve_http_port
        self._serve_grpc_port = serve_grpc_port
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._session = aiohttp.ClientSession(
            auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None, sock_connect=5)
        )
        self._runner = await serve_app(app, self._listen_host, self._listen_port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await self._handle_websocket(request)
        assert self._session is not None
        body = await request.read()
        if request.method == "PUT" and request.path == SERVE_APPLICATIONS_PATH:
            body = pin_serve_addresses(
                body, host=self._listen_host, http_port=self._serve_http_port, grpc_port=self._serve_grpc_port
            )
        headers = _forwardable(request.headers)
        # aiohttp would add its own User-Agent; the dashboard's browser guard must see the caller's (or none).
        skip = {"User-Agent", "Accept", "Accept-Encoding"} - {key.title() for key in headers}
        try:
            async with self._session.request(
                request.method,
                self._upstream + request.raw_path,
                data=body,
                headers=headers,
                skip_auto_headers=skip,
                allow_redirects=False,
            ) as upstream:
                payload = await upstream.read()
                return web.Response(
                    status=upstream.status, body=payload, headers=_forwardable(upstream.headers)
                )
        except aiohttp.ClientError as error:
            return web.Response(status=502, text=f"Ray dashboard unreachable: {error}")

    async def _handle_websocket(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        headers = {
            key: value
            for key, value in _forwardable(request.headers).items()
            if not key.lower().startswith("sec-websocket")
        }
        try:
            upstream = await self._session.ws_connect(self._upstream + request.raw_path, headers=headers)
        except aiohttp.WSServerHandshakeError as error:
            return web.Response(status=error.status, text=error.message)
        except aiohttp.ClientError as error:
            return web.Response(status=502, text=f"Ray dashboard unreachable: {error}")
        downstream = web.WebSocketResponse()
        await downstream.prepare(request)
        async with upstream:
            to_client = asyncio.create_task(_pump(upstream, downstream))
            to_upstream = asyncio.create_task(_pump(downstream, upstream))
            _done, pending = await asyncio.wait({to_client, to_upstream}, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await downstream.close()
        return downstream


async def _pump(
    source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
    sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> None:
    async for message in source:
        if message.type == aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type == aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        else:
            break
