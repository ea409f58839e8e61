"""Loopback network primitives of the sandbox: a TCP forwarder and a weighted HTTP reverse proxy.

`TcpForwarder` makes podIP:containerPort reach the real port of a local process and a Service's
clusterIP:port reach a pod; `WeightedHttpProxy` is the data plane of a Gateway (its RequestMirror copies:
sandbox/proxy_mirror.py). Both choose their target per
connection / per request, so re-pointing never disturbs what is already in flight.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from sandbox.proxy_mirror import MirrorBackend, Mirroring, MirrorSampler

log = logging.getLogger(__name__)

Target = tuple[str, int]
_CHUNK = 64 * 1024
_CONNECT_TIMEOUT_S = 5.0
# Headers that describe one hop, not the message (RFC 9110 section 7.6.1); never forwarded. Expect is
# included because the proxy's own server already answers "100 Continue" to the client.
HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "expect",
    }
)


class TcpForwarder:
    """Accepts TCP connections on listen_host:listen_port and pipes each to `target()`, asked at connect time.

    `target` returning None (or raising) closes the accepted connection. listen_port 0 binds a free port,
    readable from `port` after `start()`.
    """

    def __init__(self, listen_host: str, listen_port: int, target: Callable[[], Target | None]) -> None:
        self.listen_host = listen_host
        self._requested_port = listen_port
        self._target = target
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            return self._requested_port
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def active_connections(self) -> int:
        return len(self._connections)

    async def start(self, *, free_port_if_unprivileged: bool = False) -> None:
        """Binds the listener (OSError if the address is taken). With free_port_if_unprivileged, a port below
        1024 that this process may not bind is replaced by a free port (see `port`)."""
        if self._server is not None:
            return
        try:
            self._server = await asyncio.start_server(
                self._serve, self.listen_host, self._requested_port, reuse_address=True
            )
        except PermissionError:
            if not free_port_if_unprivileged:
                raise
            _warn_unprivileged(self.listen_host, self._requested_port)
            self._server = await asyncio.start_server(self._serve, self.listen_host, 0, reuse_address=True)

    async def stop(self) -> None:
        """Stops listening and closes every open connection."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    def _choose_target(self) -> Target | None:
        try:
            return self._target()
        except Exception:
            log.exception("forwarder %s:%s: choosing a target failed", self.listen_host, self.port)
            return None

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            target = self._choose_target()
            if target is None:
                return
            try:
                upstream_reader, upstream = await asyncio.wait_for(
                    asyncio.open_connection(*target), _CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError) as error:
                log.debug("forwarder %s:%s -> %s:%s: %s", self.listen_host, self.port, *target, error)
                return
            upstream_writer = upstream
            await asyncio.gather(
                _pipe(client_reader, upstream, client_writer),
                _pipe(upstream_reader, client_writer, upstream),
            )
        finally:
            self._connections.discard(task)
            for writer in (client_writer, upstream_writer):
                if writer is not None:
                    writer.close()


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: asyncio.StreamWriter
) -> None:
    """Copies reader to writer; at EOF half-closes writer, on a reset closes both sides."""
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof() and not writer.is_closing():
            writer.write_eof()
    except OSError:
        writer.close()
        peer.close()


@dataclass(frozen=True)
class WeightedBackend:
    host: str
    port: int
    weight: int = 1


@dataclass(frozen=True)
class ProxyRoute:
    """Requests whose path matches `path_prefix` (Gateway API PathPrefix semantics) go to `backends`."""

    path_prefix: str
    backends: tuple[WeightedBackend, ...]
    # Exact header matches (name lower-cased, value), all required; a route with more wins at equal prefix.
    headers: tuple[tuple[str, str], ...] = ()
    mirrors: tuple[MirrorBackend, ...] = ()


def path_prefix_matches(prefix: str, path: str) -> bool:
    """Gateway API PathPrefix: element-wise, so /foo matches /foo and /foo/bar but not /foobar."""
    normalized = prefix.rstrip("/")
    if not normalized:
        return True
    return path == normalized or path.startswith(normalized + "/")


class SmoothWeightedPicker:
    """Smooth weighted round robin: over any window of sum(weights) picks, each backend gets exactly its
    share, interleaved rather than in bursts. Zero-weight backends are never picked."""

    def __init__(self, backends: Sequence[WeightedBackend]) -> None:
        self._backends = [b for b in backends if b.weight > 0]
        self._total = sum(b.weight for b in self._backends)
        self._current = [0] * len(self._backends)

    def pick(self) -> WeightedBackend | None:
        if not self._backends:
            return None
        best = 0
        for index, backend in enumerate(self._backends):
            self._current[index] += backend.weight
            if self._current[index] > self._current[best]:
                best = index
        self._current[best] -= self._total
        return self._backends[best]


@dataclass(frozen=True)
class _Entry:
    prefix: str
    headers: tuple[tuple[str, str], ...]
    picker: SmoothWeightedPicker
    mirrors: tuple[MirrorSampler, ...]


class _RouteTable:
    def __init__(self, routes: Sequence[ProxyRoute]) -> None:
        self.routes = tuple(routes)
        # Longest prefix wins, then the most header matches (Gateway API rule precedence); among equals the
        # earlier route wins (sorted() is stable).
        ordered = sorted(
            self.routes, key=lambda r: (len(r.path_prefix.rstrip("/")), len(r.headers)), reverse=True
        )
        self._entries = [
            _Entry(
                route.path_prefix,
                route.headers,
                SmoothWeightedPicker(route.backends),
                tuple(MirrorSampler(mirror) for mirror in route.mirrors),
            )
            for route in ordered
        ]

    def lookup(self, path: str, headers: Mapping[str, str] | None = None) -> _Entry | None:
        for entry in self._entries:
            if path_prefix_matches(entry.prefix, path) and all(
                (headers or {}).get(name) == value for name, value in entry.headers
            ):
                return entry
        return None


class WeightedHttpProxy:
    """HTTP/1.1 reverse proxy on listen_host:listen_port choosing a weighted backend per request.

    Unknown path -> 404; a matching route without any backend of positive weight -> 503; backend unreachable
    -> 502. Bodies are streamed both ways. `set_routes` swaps the table atomically for the next request.
    """

    def __init__(self, listen_host: str, listen_port: int, owner: str = "") -> None:
        self.listen_host = listen_host
        self._requested_port = listen_port
        self.owner = owner  # who runs this listener (a Gateway's namespace/name, with its controller's id)
        self._table = _RouteTable(())
        self.mirroring = Mirroring()  # RequestMirror copies (sandbox/proxy_mirror.py)
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.ServerRunner | None = None
        self._site: web.TCPSite | None = None

    @property
    def port(self) -> int:
        server = self._site._server if self._site is not None else None
        if isinstance(server, asyncio.Server) and server.sockets:
            return int(server.sockets[0].getsockname()[1])
        return self._requested_port

    @property
    def routes(self) -> tuple[ProxyRoute, ...]:
        return self._table.routes

    def set_routes(self, routes: Iterable[ProxyRoute]) -> None:
        new_routes = tuple(routes)
        # An unchanged table keeps its round-robin position, so frequent resyncs do not skew the split.
        if new_routes != self._table.routes:
            self._table = _RouteTable(new_routes)

    async def start(self, *, free_port_if_unprivileged: bool = False) -> None:
        """Binds the listener (OSError if the address is taken); free_port_if_unprivileged as for
        `TcpForwarder.start`."""
        if self._runner is not None:
            return
        self._session = aiohttp.ClientSession(
            # A new backend connection per request: backends are Service clusterIPs whose proxy pins each
            # connection to one pod, so a pooled connection would keep using a pod its Service no longer
            # selects, and would break (failing non-idempotent requests) once that pod is gone.
            connector=aiohttp.TCPConnector(limit=0, force_close=True),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT_S),
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        self._runner = web.ServerRunner(web.Server(self._handle, access_log=None), shutdown_timeout=1.0)
        await self._runner.setup()
        try:
            await self._bind(self._requested_port)
        except PermissionError:
            if not free_port_if_unprivileged:
                await self.stop()
                raise
            _warn_unprivileged(self.listen_host, self._requested_port)
            await self._bind(0)
        except OSError:
            await self.stop()
            raise

    async def _bind(self, port: int) -> None:
        assert self._runner is not None
        site = web.TCPSite(self._runner, self.listen_host, port, reuse_address=True)
        await site.start()
        self._site = site

    async def stop(self) -> None:
        runner, self._runner, self._site = self._runner, None, None
        if runner is not None:
            await runner.cleanup()
        await self.mirroring.stop()
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        entry = self._table.lookup(request.path, request.headers)
        if entry is None:
            # The table's size tells "no route at all" (a listener without its routes) from "none matches",
            # and the owner which listener answered.
            routes, owner = len(self._table.routes), self.owner or "?"
            return web.Response(
                status=404, text=f"no route matches this path ({routes} routes, listener of {owner})\n"
            )
        backend = entry.picker.pick()
        if backend is None:
            return web.Response(status=503, text="no backend available for this route\n")
        assert self._session is not None
        url = URL(f"http://{backend.host}:{backend.port}{request.raw_path}", encoded=True)
        body: AsyncIterator[bytes] | None = (
            request.content.iter_chunked(_CHUNK) if request.body_exists else None
        )
        for sampler in entry.mirrors:
            if sampler.copies():
                headers = _forwarded_request_headers(request)
                body = self.mirroring.copy(self._session, request, headers, sampler.mirror, body)
        try:
            upstream = await self._session.request(
                request.method,
                url,
                headers=_forwarded_request_headers(request),
                data=body,
                allow_redirects=False,
                compress=None,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            log.debug("proxy -> %s:%s: %s", backend.host, backend.port, error)
            return web.Response(status=502, text=f"backend {backend.host}:{backend.port} unreachable\n")
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            response.headers.extend(_end_to_end(upstream.headers))
            await response.prepare(request)
            try:
                async for chunk in upstream.content.iter_chunked(_CHUNK):
                    await response.write(chunk)
            except (aiohttp.ClientError, OSError) as error:
                # Headers are gone already: the only honest signal left is to cut the connection.
                log.debug("proxy: backend %s:%s broke mid-body: %s", backend.host, backend.port, error)
                if request.transport is not None:
                    request.transport.close()
                return response
            await response.write_eof()
        return response


def _warn_unprivileged(host: str, port: int) -> None:
    log.warning("no privilege to bind %s:%s; listening on a free port of %s instead", host, port, host)


def _end_to_end(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> CIMultiDict[str]:
    connection_values = headers.getall("Connection", [])
    listed = {token.strip().lower() for value in connection_values for token in value.split(",")}
    kept: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        lowered = name.lower()
        if lowered not in HOP_BY_HOP_HEADERS and lowered not in listed:
            kept.add(name, value)
    return kept


def _forwarded_request_headers(request: web.BaseRequest) -> CIMultiDict[str]:
    headers = _end_to_end(request.headers)
    peer = request.remote
    if peer:
        previous = headers.get("X-Forwarded-For")
        headers["X-Forwarded-For"] = f"{previous}, {peer}" if previous else peer
    headers.setdefault("X-Forwarded-Proto", "http")
    return headers
