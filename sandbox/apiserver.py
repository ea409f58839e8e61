"""The sandbox's Kubernetes REST API on 127.0.0.1 (aiohttp), serving a `Store`.

    server = ApiServer(store)
    url = await server.start()          # http://127.0.0.1:<port>
    write_kubeconfig(path, url)         # sandbox.kubeconfig
    ...
    await server.stop()

Served: discovery (/api, /apis, group versions, /version), the resources of sandbox.resources with the verbs
of sandbox.apiserver_handlers, the Service and Pod proxy subresources, and fault injection at /sandbox/faults.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

from aiohttp import web

from sandbox import resources
from sandbox.apiserver_handlers import (
    MAX_BODY_BYTES,
    ResourceHandlers,
    error_response,
    json_response,
    read_body,
    request_verb,
)
from sandbox.apiserver_paths import ResourcePath, UnknownPath, parse_resource_path
from sandbox.apiserver_proxy import ProxyForwarder
from sandbox.faults import Fault, FaultInjector
from sandbox.store import ApiError, Store
from sandbox.store_errors import bad_request, conflict

log = logging.getLogger(__name__)

FAULTS_PATH = "/sandbox/faults"
SERVER_VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.0+raypilot-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


class ApiServer:
    def __init__(
        self, store: Store, host: str = "127.0.0.1", port: int = 0, faults: FaultInjector | None = None
    ) -> None:
        self.store = store
        self.host = host
        self.port = port
        self.faults = faults if faults is not None else FaultInjector()
        self.url = ""
        self._handlers = ResourceHandlers(store)
        self._proxy = ProxyForwarder(store)
        self._runner: web.AppRunner | None = None
        # Requests served per "<verb> <resource>" (e.g. "watch rayclusters", "get services/proxy"): the
        # benchmarks compare the Kubernetes API load of raypilot's waits with KubeRay's requeue cadence.
        self.requests: Counter[str] = Counter()

    async def start(self) -> str:
        """Start serving; returns the base URL (with the real port when port was 0)."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self.url = f"http://{self.host}:{self.port}"
        log.info("sandbox Kubernetes API serving at %s", self.url)
        return self.url

    async def stop(self) -> None:
        for task in list(self._handlers.watch_tasks):
            task.cancel()
        await self._proxy.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            if request.path.rstrip("/") == FAULTS_PATH:
                return await self._faults_endpoint(request)
            try:
                target = parse_resource_path(self.store, request.path)
            except UnknownPath:
                return self._discovery(request)
            verb = request_verb(request.method, target, request.query)
            self.requests[f"{verb} {target.resource}"] += 1
            fault = self.faults.decide(verb, target.resource)
            if fault is not None:
                injected = await self._inject(fault, verb, target)
                if injected is not None:
                    return injected
            if target.subresource == "proxy":
                return await self._proxy.forward(request, target)
            return await self._handlers.handle(request, target)
        except ApiError as exc:
            return error_response(exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("internal error serving %s %s", request.method, request.path)
            return error_response(ApiError(500, "InternalError", f"an error on the server: {exc!r}"))

    async def _inject(self, fault: Fault, verb: str, target: ResourcePath) -> web.Response | None:
        if fault.latency_seconds:
            await asyncio.sleep(fault.latency_seconds)
        if fault.status is None:
            return None
        if fault.status == 409:
            error = conflict(target.rt, target.name or "")
        else:
            error = ApiError(fault.status, fault.reason, fault.message(verb, target.resource))
        headers: dict[str, str] = {}
        if fault.retry_after_seconds is not None:
            headers["Retry-After"] = str(fault.retry_after_seconds)
            error.details = {"retryAfterSeconds": fault.retry_after_seconds}
        return error_response(error, headers=headers)

    def _discovery(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            raise _not_found()
        parts = [p for p in request.path.split("/") if p]
        doc: dict[str, Any] | None = None
        types = self.store.types
        if parts == ["api"]:
            doc = resources.api_versions_doc()
        elif parts == ["api", "v1"]:
            doc = resources.api_resource_list_doc("", "v1", types)
        elif parts == ["apis"]:
            doc = resources.api_group_list_doc(types)
        elif len(parts) == 2 and parts[0] == "apis":
            doc = resources.api_group_doc(parts[1], types)
        elif len(parts) == 3 and parts[0] == "apis":
            doc = resources.api_resource_list_doc(parts[1], parts[2], types)
        elif parts == ["openapi", "v3"]:
            doc = resources.openapi_v3_root_doc(types)
        elif parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
            group, version = ("", parts[3]) if parts[2] == "api" else (parts[3], parts[-1])
            doc = resources.openapi_v3_group_version_doc(group, version, types)
        elif parts == ["version"]:
            doc = SERVER_VERSION
        elif parts in (["healthz"], ["readyz"], ["livez"]):
            return web.Response(text="ok", content_type="text/plain")
        if doc is None:
            raise _not_found()
        return json_response(doc)

    async def _faults_endpoint(self, request: web.Request) -> web.Response:
        if request.method == "DELETE":
            self.faults.clear()
        elif request.method in ("POST", "PUT"):
            try:
                self.faults.load_json(await read_body(request))
            except (ValueError, TypeError) as exc:
                raise bad_request(f"invalid fault rules: {exc}") from None
        elif request.method != "GET":
            raise ApiError(405, "MethodNotAllowed", "use GET, POST or DELETE on /sandbox/faults")
        return json_response(self.faults.to_json())
