"""Faults in front of the real API server: a TLS reverse proxy on 127.0.0.1 (the control plane's serving
certificate, so a kubeconfig only changes its server URL) that forwards every request, credentials included,
to kube-apiserver, and injects faults (sandbox/faults.py: errors such as 500, 409 and 429 with Retry-After,
and latency, per verb and resource, set in code or at its `/sandbox/faults` endpoint), plus dropped watches:
with `drop_watches_after_s` set, every watch response is cut after that long, as a load balancer's idle
timeout or an API server's restart cuts it.

It runs on a thread of its own with its own event loop (`fault_proxy(plane)`), so a test's event loop being
busy never slows the API down; `on_loop` reads or changes its rules and its count of requests there, since
neither is safe to touch from another thread while requests come in.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import aiohttp
import yaml
from aiohttp import web

from sandbox.faults import ApiError, Fault, FaultInjector
from sandbox.realkube.controlplane import ControlPlane, ControlPlaneError, free_port

__all__ = ["FaultProxy", "fault_proxy", "proxied_kubeconfig", "request_info"]

FAULTS_PATH = "/sandbox/faults"
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}
)
_CHUNK = 64 * 1024
_ON_LOOP_WITHIN_S = 30.0
SHUTDOWN_S = 1.0
T = TypeVar("T")


def request_info(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str]:
    """(verb, resource) of a request as RBAC names them, the resource being a plural or plural/subresource;
    ("", "") for a path that names no resource (discovery, /version, /readyz)."""
    parts = [part for part in path.split("/") if part]
    if parts[:2] == ["api", "v1"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        rest = parts[3:]
    else:
        return "", ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return "", ""
    resource, name, subresource = (
        rest[0],
        rest[1] if len(rest) > 1 else None,
        rest[2] if len(rest) > 2 else None,
    )
    if subresource:
        resource = f"{resource}/{subresource}"
    if subresource == "proxy":
        return method.lower(), resource
    if method == "GET":
        if name is not None:
            return "get", resource
        return ("watch" if query.get("watch") in ("1", "true", "True") else "list"), resource
    if method == "DELETE":
        return ("delete" if name is not None else "deletecollection"), resource
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower()), resource


def _fault_response(fault: Fault, verb: str, resource: str) -> web.Response:
    status = fault.status or 500
    if status == 409:
        message = f"Operation cannot be fulfilled on {resource}: the object has been modified (injected)"
        error = ApiError(409, "Conflict", message)
    else:
        error = ApiError(status, fault.reason, fault.message(verb, resource))
    headers = {}
    if fault.retry_after_seconds is not None:
        headers["Retry-After"] = str(fault.retry_after_seconds)
        error.details = {"retryAfterSeconds": fault.retry_after_seconds}
    return web.json_response(error.to_status(), status=status, headers=headers)


@dataclass
class FaultProxy:
    upstream: str
    ca_file: Path
    cert_file: Path
    key_file: Path
    port: int
    faults: FaultInjector
    drop_watches_after_s: float | None = None
    # "verb resource" of every request that names a resource, faulted or forwarded ("list jobs")
    requests: Counter[str] = field(default_factory=Counter, init=False)
    _session: aiohttp.ClientSession | None = field(default=None, init=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def on_loop(self, step: Callable[[FaultProxy], T]) -> T:
        """`step(self)`'s result, run on the proxy's own loop between two requests."""
        assert self._loop is not None, "the proxy is not serving"
        done: Future[T] = Future()

        def run() -> None:
            try:
                done.set_result(step(self))
            except BaseException as error:
                done.set_exception(error)

        self._loop.call_soon_threadsafe(run)
        return done.result(_ON_LOOP_WITHIN_S)

    async def serve(self, stop: asyncio.Event, listening: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        upstream_tls = ssl.create_default_context(cafile=str(self.ca_file))
        serving_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        serving_tls.load_cert_chain(str(self.cert_file), str(self.key_file))
        connector = aiohttp.TCPConnector(ssl=upstream_tls)
        async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
            self._session = session
            server = web.Server(self._handle)
            # On the way out a watch still streaming is cut, as a stopped API server cuts it, instead of being
            # waited for (aiohttp's default waits a minute, and holds kube-apiserver's end of it meanwhile).
            runner = web.ServerRunner(server, shutdown_timeout=SHUTDOWN_S)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port, ssl_context=serving_tls).start()
            listening.set()
            try:
                await stop.wait()
            finally:
                await runner.cleanup()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.path.rstrip("/") == FAULTS_PATH:
            return await self._faults_endpoint(request)
        verb, resource = request_info(request.method, request.path, request.query)
        if resource:
            self.requests[f"{verb} {resource}"] += 1
        fault = self.faults.decide(verb, resource) if resource else None
        if fault is not None:
            if fault.latency_seconds:
                await asyncio.sleep(fault.latency_seconds)
            if fault.status is not None:
                return _fault_response(fault, verb, resource)
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        body = await request.read() if request.body_exists else None
        try:
            upstream = await self._session.request(
                request.method,
                f"{self.upstream}{request.raw_path}",
                headers=headers,
                data=body,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        except (aiohttp.ClientError, OSError) as error:
            failure = ApiError(503, "ServiceUnavailable", f"the API server did not answer: {error}")
            return web.json_response(failure.to_status(), status=503)
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP_BY_HOP:
                    response.headers.add(name, value)
            await response.prepare(request)
            cut = self.drop_watches_after_s if verb == "watch" else None
            with contextlib.suppress(TimeoutError, aiohttp.ClientError, ConnectionError):
                async with asyncio.timeout(cut):
                    async for chunk in upstream.content.iter_chunked(_CHUNK):
                        await response.write(chunk)
            if cut is not None and request.transport is not None:
                request.transport.close()  # a watch cut mid-stream, not a clean end
                return response
            with contextlib.suppress(ConnectionError):  # the client went away first
                await response.write_eof()
            return response

    async def _faults_endpoint(self, request: web.BaseRequest) -> web.Response:
        if request.method == "DELETE":
            self.faults.clear()
        elif request.method in ("POST", "PUT"):
            try:
                self.faults.load_json(await request.json())
            except (ValueError, TypeError) as error:
                return web.json_response(ApiError(400, "BadRequest", str(error)).to_status(), status=400)
        return web.json_response(self.faults.to_json())


@contextlib.contextmanager
def fault_proxy(
    plane: ControlPlane, faults: FaultInjector | None = None, drop_watches_after_s: float | None = None
) -> Iterator[FaultProxy]:
    """A fault proxy in front of `plane`'s API server, serving on a thread until the block ends."""
    certs = plane.certs
    proxy = FaultProxy(
        plane.server,
        certs.ca_cert,
        certs.serving_cert,
        certs.serving_key,
        free_port(),
        faults or FaultInjector(),
        drop_watches_after_s,
    )
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    listening = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            loop.run_until_complete(proxy.serve(stop, listening))
        except BaseException as error:
            failures.append(error)
        finally:
            listening.set()
            loop.close()

    thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
    thread.start()
    listening.wait()
    if failures:
        raise ControlPlaneError(f"the fault proxy did not start: {failures[0]!r}")
    try:
        yield proxy
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)


def proxied_kubeconfig(kubeconfig: Path, proxy: FaultProxy, path: Path) -> Path:
    """A copy of `kubeconfig` whose clusters are reached through `proxy`."""
    config = yaml.safe_load(kubeconfig.read_text())
    for cluster in config.get("clusters") or []:
        cluster["cluster"]["server"] = proxy.url
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path
