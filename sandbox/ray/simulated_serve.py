"""The Serve REST API of the simulated dashboard and its Serve HTTP proxy.

PUT bodies are validated with Ray's own `ServeDeploySchema` (so 400 texts are exactly Ray's); the schema
is imported once, off the event loop, when the dashboard starts. The first PUT "starts Serve": it takes
`serve_start_s`, begins the controller loop and opens the proxy on the serve port, which then answers
`/-/healthz`, `/-/routes` and the route prefixes of the apps with the JSON of `sandbox.apps.versioned`.
DELETE shuts Serve down: apps gone, proxy closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
import traceback
import uuid
import warnings
from collections import Counter
from typing import Any

from aiohttp import web

from sandbox.apps.holds import HOLD_PARAM, held_until
from sandbox.ray.listening import serve_app
from sandbox.ray.simulated_entrypoint import EntrypointPlan, Step
from sandbox.ray.simulated_replicas import world_size
from sandbox.ray.simulated_serve_render import EMPTY_INSTANCE_DETAILS, ServeIdentity, instance_details
from sandbox.ray.simulated_serve_state import SimulatedApp, SimulatedReplica, SimulatedServeState
from sandbox.ray.simulated_timings import SimulationTimings

SERVE_PATH = "/api/serve/applications/"
# The Ray job raypilot submits to read replica ranks (activities/replica_ranks.py) calls the Serve
# controller's private `_get_replica_ranks_mapping` and prints one line: this prefix, then app -> deployment
# -> replica id -> [rank, node_rank, local_rank] as JSON. The simulated Serve answers it from its state.
RANKS_DRIVER_CALL = "_get_replica_ranks_mapping"
RANKS_OUTPUT_PREFIX = "RAYPILOT_REPLICA_RANKS "
NO_CONTROLLER = (
    "ValueError: Failed to look up actor with name 'SERVE_CONTROLLER_ACTOR'. This could because 1. You are "
    "trying to look up a named actor you didn't create. 2. The named actor died. 3. You did not use a "
    "namespace matching the namespace of the actor."
)
# The Ray job raypilot submits when a cluster's drain starts (activities/serve_connections.py) marks, for
# argv[1] seconds, every response of the Serve proxies `Connection: close`, and prints this prefix and how
# many HTTP servers it reached. The simulated proxy does the same.
CLOSING_DRIVER_CALL = "__ray_call__.remote(close_after_responses"
CLOSING_OUTPUT_PREFIX = "RAYPILOT_SERVE_CONNECTIONS_CLOSING "
VALID_API_TYPES = ("imperative", "declarative")
REPLICA_WAIT_S = 30.0  # how long the proxy holds a request for an app with no running replica
# The simulated app (standing for a user's model) takes this many seconds to answer when the request names
# them, e.g. `/?work_s=90`: a request longer than a deletion delay, for the drain tests.
WORK_SECONDS_PARAM = "work_s"
ONGOING_HTTP_REQUESTS_GAUGE = "ray_serve_num_ongoing_http_requests"
_schema: Any = None


def load_serve_schema() -> Any:
    """Ray's ServeDeploySchema (imports ray.serve: a second or two, so call it off the event loop)."""
    global _schema
    if _schema is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Ray's pydantic-v1-style Field extras
            from ray.serve.schema import ServeDeploySchema
        _schema = ServeDeploySchema
    return _schema


class SimulatedServe:
    def __init__(
        self,
        timings: SimulationTimings,
        *,
        host: str,
        port: int,
        head_env: dict[str, str],
        node_id: str,
        listen: str | None = None,
    ) -> None:
        self._timings = timings
        self._host = host
        self._listen = listen or host
        self._port = port
        self._head_env = head_env
        self._identity = ServeIdentity(
            node_id=node_id,
            node_ip=host,
            controller_actor_id=uuid.uuid4().hex,
            proxy_actor_id=uuid.uuid4().hex,
        )
        self.state: SimulatedServeState | None = None
        self._options: dict[str, Any] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._proxy: web.AppRunner | None = None
        self._start_lock = asyncio.Lock()
        self._round_robin = itertools.count()
        # As the proxy's gauge: application requests received and not yet answered.
        self.ongoing_http_requests = 0
        # The application requests the apps answered, per version answered (no real Ray counter says which
        # version served a request): tests count what reached each cluster, e.g. a Gateway's mirrored copies.
        self.answers: Counter[str] = Counter()
        self.closes_connections_until = 0.0  # time.monotonic() until which responses close their connection

    @property
    def running(self) -> bool:
        return self.state is not None

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get(SERVE_PATH, self.get_applications)
        app.router.add_put(SERVE_PATH, self.put_applications)
        app.router.add_delete(SERVE_PATH, self.delete_applications)

    async def get_applications(self, request: web.Request) -> web.Response:
        api_type = request.query.get("api_type")
        if api_type and api_type.lower() not in VALID_API_TYPES:
            return web.Response(
                status=400,
                text=f"Invalid 'api_type' value: '{api_type}'. Must be one of: {', '.join(VALID_API_TYPES)}",
            )
        if self.state is None:
            return web.json_response(EMPTY_INSTANCE_DETAILS)
        details = instance_details(
            self.state,
            self._identity,
            api_type=api_type.lower() if api_type else None,
            **self._options,
        )
        return web.json_response(details)

    async def put_applications(self, request: web.Request) -> web.Response:
        schema = load_serve_schema()
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=500, text=traceback.format_exc())
        from pydantic import ValidationError

        try:
            config = schema.model_validate(body)
        except ValidationError as error:
            return web.Response(status=400, text=repr(error))
        async with self._start_lock:
            if self.state is None:
                await self._start_serve(config)
        assert self.state is not None
        applications = [app.model_dump(mode="json", exclude_unset=True) for app in config.applications]
        self.state.apply(
            {"applications": applications, "target_capacity": config.target_capacity},
            asyncio.get_running_loop().time(),
            time.time(),
        )
        return web.Response()

    async def _start_serve(self, config: Any) -> None:
        await asyncio.sleep(self._timings.serve_start_s)
        self._options = {
            "http_options": {
                **config.http_options.model_dump(mode="json"),
                "host": self._host,
                "port": self._port,
            },
            "grpc_options": config.grpc_options.model_dump(mode="json"),
            "proxy_location": str(getattr(config.proxy_location, "value", config.proxy_location)),
        }
        self.state = SimulatedServeState(self._timings, head_env=self._head_env)
        proxy = web.Application()
        proxy.router.add_route("*", "/{tail:.*}", self._proxy_request)
        self._proxy = await serve_app(proxy, self._listen, self._port)
        self._loop_task = asyncio.create_task(self._control_loop())

    async def delete_applications(self, request: web.Request) -> web.Response:
        await self.shutdown()
        return web.Response()

    async def shutdown(self) -> None:
        """What serve.shutdown() does: every app, the controller and the proxy go away."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
            self._loop_task = None
        if self._proxy is not None:
            await self._proxy.cleanup()
            self._proxy = None
        self.state = None

    def ranks_driver(self, entrypoint: str, command_s: float) -> EntrypointPlan | None:
        """The plan of a replica ranks driver (None for any other entrypoint): the ranks of every replica
        that holds one (all but those stopping; one node, so node rank 0 and local rank = rank), or the
        failure of a driver that finds no Serve controller."""
        if RANKS_DRIVER_CALL not in entrypoint:
            return None
        if self.state is None:
            return EntrypointPlan((Step(command_s, NO_CONTROLLER),), 1)
        found = {
            app.name: {
                deployment.name: {
                    replica.replica_id: [replica.rank, 0, replica.rank]
                    for replica in deployment.replicas
                    if replica.state != "STOPPING"
                }
                for deployment in app.deployments.values()
            }
            for app in self.state.apps.values()
            if not app.deleting
        }
        return EntrypointPlan((Step(command_s, RANKS_OUTPUT_PREFIX + json.dumps(found)),), 0)

    def closing_driver(self, entrypoint: str, command_s: float) -> EntrypointPlan | None:
        """The plan of the connection-closing driver (None for any other entrypoint): from now on, for the
        seconds its last argument names, every proxy response says `Connection: close`."""
        if CLOSING_DRIVER_CALL not in entrypoint:
            return None
        if self.state is None:
            return EntrypointPlan((Step(command_s, NO_CONTROLLER),), 1)
        seconds = float(entrypoint.rsplit(" ", 1)[-1])
        self.closes_connections_until = time.monotonic() + seconds
        return EntrypointPlan((Step(command_s, CLOSING_OUTPUT_PREFIX + "1"),), 0)

    async def _control_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            assert self.state is not None
            self.state.tick(loop.time(), time.time())
            await asyncio.sleep(self._timings.tick_s)

    def _route(self, path: str) -> SimulatedApp | None:
        assert self.state is not None
        best: SimulatedApp | None = None
        for app in self.state.apps.values():
            prefix = app.route_prefix
            if prefix is None or app.deleting:
                continue
            matches = prefix == "/" or path == prefix or path.startswith(prefix + "/")
            if matches and (best is None or len(prefix) > len(best.route_prefix or "")):
                best = app
        return best

    async def _proxy_request(self, request: web.Request) -> web.StreamResponse:
        if self.state is None:
            raise web.HTTPServiceUnavailable()
        if request.path == "/-/healthz":
            return web.Response(text="success")
        if request.path == "/-/routes":
            routes = {
                app.route_prefix: app.name
                for app in self.state.apps.values()
                if app.route_prefix is not None and not app.deleting
            }
            return web.Response(text=json.dumps(routes), content_type="application/json")
        app = self._route(request.path)
        if app is None:
            return web.Response(
                status=404,
                text=f"Path '{request.path}' not found. Ping http://.../-/routes for available routes.",
            )
        self.ongoing_http_requests += 1
        try:
            response = await self._answer(app, request)
        finally:
            self.ongoing_http_requests -= 1
        if time.monotonic() < self.closes_connections_until:
            response.force_close()  # aiohttp answers `Connection: close` and closes after the response
        return response

    def metrics_exposition(self) -> str:
        """The proxy's in-flight gauge as Ray's metrics agent exports it (Prometheus text); none before Serve
        started a proxy."""
        if self.state is None:
            return ""
        labels = f'node_id="{self._identity.node_id}",node_ip_address="{self._identity.node_ip}"'
        return (
            f"# TYPE {ONGOING_HTTP_REQUESTS_GAUGE} gauge\n"
            f"{ONGOING_HTTP_REQUESTS_GAUGE}{{{labels}}} {float(self.ongoing_http_requests)}\n"
        )

    async def _answer(self, app: SimulatedApp, request: web.Request) -> web.StreamResponse:
        replica = await self._wait_for_replica(app)
        if replica is None:
            return web.Response(status=503, text=f"No replica of application '{app.name}' is running.")
        work = request.query.get(WORK_SECONDS_PARAM)
        if work:  # on the replica it was assigned to, which finishes it even if it is being stopped meanwhile
            await asyncio.sleep(float(work))
        hold = request.query.get(HOLD_PARAM)
        if hold:
            await held_until(hold)
        ingress = app.ingress
        assert ingress is not None
        self.answers[replica.answer_version] += 1
        return web.json_response(
            {
                "version": replica.answer_version,
                "replica": replica.replica_id,
                "rank": replica.rank,
                "world_size": world_size(ingress.options.get("num_replicas")),
            }
        )

    async def _wait_for_replica(self, app: SimulatedApp) -> SimulatedReplica | None:
        """A running replica of the app's ingress deployment. As Serve's router does, a request that finds
        none (the app scaled to target_capacity 0, a capacity step still starting replicas) is held until one
        runs instead of failing; it fails only when the app goes away or after REPLICA_WAIT_S."""
        deadline = time.monotonic() + REPLICA_WAIT_S
        while True:
            replica = self._pick_replica(app)
            current = self.state.apps.get(app.name) if self.state is not None else None
            if replica is not None or current is not app or app.deleting or time.monotonic() > deadline:
                return replica
            await asyncio.sleep(self._timings.tick_s)

    def _pick_replica(self, app: SimulatedApp) -> SimulatedReplica | None:
        ingress = app.ingress
        if ingress is None:
            return None
        ready = [replica for replica in ingress.replicas if replica.state in ("RUNNING", "UPDATING")]
        if not ready:
            return None
        return ready[next(self._round_robin) % len(ready)]
