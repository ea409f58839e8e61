"""A simulated Ray 2.60 dashboard: the Jobs and Serve REST API of one head, in-process, on loopback.

Same surface as `RealRayHead` (start/stop/restart, `ports`, `host`, `pids`), no Ray processes. Transport
rules as on a real head: token auth when the head env has RAY_AUTH_MODE=token (401 without a token, 403
with a wrong one; `Authorization` or `X-Ray-Authorization: Bearer`; public health paths exempt), then the
browser guard (405 for anything but GET/HEAD/OPTIONS from browser-like requests). See `simulated_jobs`,
`simulated_serve` and `simulated_serve_state` for the behaviour, and the contract suite in
tests/sandbox/ray for what is checked against real Ray.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

from sandbox.ray.head_access import HeadAccess
from sandbox.ray.listening import serve_app
from sandbox.ray.ports import claim_ports, release_ports, reserve_ports
from sandbox.ray.real_params import auth_token
from sandbox.ray.simulated_entrypoint import EntrypointPlan
from sandbox.ray.simulated_jobs import SimulatedJobs
from sandbox.ray.simulated_serve import SimulatedServe, load_serve_schema
from sandbox.ray.simulated_timings import SimulationTimings

RAY_VERSION = "2.60.0"
RAY_COMMIT = "b7f4259e944bf6959f721b106adc366ddfa0c356"
DASHBOARD_API_VERSION = "4"
PUBLIC_PATHS = frozenset(
    {
        "/",
        "/favicon.ico",
        "/api/authentication_mode",
        "/api/authenticate",
        "/api/healthz",
        "/api/gcs_healthz",
        "/api/local_raylet_healthz",
        "/-/healthz",
    }
)
BROWSER_HEADERS = (
    "Referer",
    "Origin",
    "Sec-Fetch-Mode",
    "Sec-Fetch-Dest",
    "Sec-Fetch-Site",
    "Sec-Fetch-User",
    "Access-Control-Request-Method",
    "Access-Control-Request-Headers",
)
BROWSER_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_browser_request(headers: Mapping[str, str]) -> bool:
    return headers.get("User-Agent", "").startswith("Mozilla") or any(
        name in headers for name in BROWSER_HEADERS
    )


def auth_failure(headers: Mapping[str, str], cookies: Mapping[str, str], token: str) -> web.Response | None:
    """Ray's token check: 401 with no token, 403 with a wrong one, None when allowed."""
    presented = headers.get("Authorization") or headers.get("X-Ray-Authorization")
    if not presented and cookies.get("ray-authentication-token"):
        presented = "Bearer " + cookies["ray-authentication-token"]
    if not presented:
        return web.Response(status=401, text="Unauthorized: Missing authentication token")
    if presented != f"Bearer {token}":
        return web.Response(status=403, text="Forbidden: Invalid authentication token")
    return None


# Ray's dashboard counts its requests in this family (labelled by method and handler; here by method and
# route). Real Ray exports it on the dashboard's own metrics port, the simulation on its metrics export port,
# so that a bench reads a simulated head's dashboard load in a Pod as it reads its other metrics.
DASHBOARD_REQUESTS_COUNTER = "ray_dashboard_api_requests_count_requests_total"
# The simulation's own account, beside Ray's metrics on the metrics export port (real Ray has no such path):
# its requests per route and per path, how many of its Ray jobs are in each state, and the Serve application
# requests it answered per version, for the benches and tests that count a head's load from outside its Pod.
# Reading it is no dashboard request.
SIMULATION_COUNTERS_PATH = "/simulation/counters"


def dashboard_requests_exposition(requests: Mapping[str, int]) -> str:
    """The dashboard's requests so far ("<METHOD> <route>" -> count) as Prometheus text."""
    if not requests:
        return ""
    lines = [f"# TYPE {DASHBOARD_REQUESTS_COUNTER} counter"]
    for key, count in sorted(requests.items()):
        method, _, route = key.partition(" ")
        lines.append(
            f'{DASHBOARD_REQUESTS_COUNTER}{{Component="dashboard",endpoint="{route}",method="{method}"}} '
            f"{float(count)}"
        )
    return "\n".join(lines) + "\n"


class SimulatedDashboard(HeadAccess):
    """`ports` has "dashboard", "serve" and "metrics" (on `host`); the serve port answers once Serve was
    started by a PUT, as on a real head."""

    def __init__(
        self,
        name: str,
        env: Mapping[str, str],
        ray_start_params: Mapping[str, str],
        *,
        host: str = "127.0.0.1",
        timings: SimulationTimings | None = None,
        listen: str | None = None,
        ports: Mapping[str, int] | None = None,
    ) -> None:
        """`host` is the head's address (in its URLs and Serve's details); it listens there unless `listen`
        says otherwise (a pod's head: every address, as probes ask localhost). `ports` fixes the dashboard,
        serve and metrics ports (a pod's own network has Ray's defaults free) instead of reserving some."""
        self.name = name
        self.host = host
        self._listen = listen or host
        self._env = dict(env)
        self.ray_start_params = dict(ray_start_params)
        self._token = auth_token(self._env)
        self.timings = timings or SimulationTimings()
        if ports is None:
            dashboard_port, serve_port, metrics_port = reserve_ports(3)
            ports = {"dashboard": dashboard_port, "serve": serve_port, "metrics": metrics_port}
        self._ports = {name: ports[name] for name in ("dashboard", "serve", "metrics")}
        self._runner: web.AppRunner | None = None
        self._metrics_runner: web.AppRunner | None = None
        self.jobs: SimulatedJobs | None = None
        self.serve: SimulatedServe | None = None
        self.session_name = ""
        # Requests served per "<METHOD> <route>" (e.g. "GET /api/jobs/{job_id}"), kept across restarts: the
        # benchmarks measure how often raypilot's waits call a dashboard.
        self.requests: Counter[str] = Counter()
        self.paths: Counter[str] = Counter()  # the same per path (e.g. one job's reads)

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._ports)

    @property
    def pids(self) -> list[int]:
        return []

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError(f"simulated dashboard {self.name} is already running")
        await asyncio.to_thread(load_serve_schema)
        claim_ports(self._ports.values())
        node_id = secrets.token_hex(28)
        self.session_name = f"session_simulated_{secrets.token_hex(4)}"
        self.jobs = SimulatedJobs(
            self.timings, agent_address=self.dashboard_url, node_id=node_id, drivers=self._driver_plan
        )
        self.serve = SimulatedServe(
            self.timings,
            host=self.host,
            port=self._ports["serve"],
            head_env=self._env,
            node_id=node_id,
            listen=self._listen,
        )
        app = web.Application(
            middlewares=[self._count_middleware, self._auth_middleware, self._browser_middleware]
        )
        app.router.add_get("/api/version", self._version)
        app.router.add_get("/api/ray/version", self._version)
        app.router.add_get("/api/gcs_healthz", self._gcs_healthz)
        app.router.add_get("/api/authentication_mode", self._authentication_mode)
        self.jobs.add_routes(app)
        self.serve.add_routes(app)
        self._runner = await serve_app(app, self._listen, self._ports["dashboard"])
        # The metrics export port (--metrics-export-port) with the Serve proxy's in-flight gauge.
        metrics = web.Application()
        metrics.router.add_get("/metrics", self._metrics)
        metrics.router.add_get(SIMULATION_COUNTERS_PATH, self._counters)
        self._metrics_runner = await serve_app(metrics, self._listen, self._ports["metrics"])

    async def _metrics(self, request: web.Request) -> web.Response:
        serve = self.serve
        text = serve.metrics_exposition() if serve is not None else ""
        return web.Response(text=text + dashboard_requests_exposition(self.requests))

    async def _counters(self, request: web.Request) -> web.Response:
        jobs = self.jobs.jobs.values() if self.jobs is not None else ()
        return web.json_response(
            {
                "routes": dict(self.requests),
                "paths": dict(self.paths),
                "jobStates": dict(Counter(job.status for job in jobs)),
                "serveAnswers": dict(self.serve.answers) if self.serve is not None else {},
            }
        )

    def _driver_plan(self, entrypoint: str) -> EntrypointPlan | None:
        serve = self.serve
        if serve is None:
            return None
        closing = serve.closing_driver(entrypoint, self.timings.command_s)
        return closing if closing is not None else serve.ranks_driver(entrypoint, self.timings.command_s)

    async def _shutdown(self) -> None:
        if self._metrics_runner is not None:
            await self._metrics_runner.cleanup()
            self._metrics_runner = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.serve is not None:
            await self.serve.shutdown()
            self.serve = None
        if self.jobs is not None:
            await self.jobs.close()
            self.jobs = None

    async def stop(self) -> None:
        await self._shutdown()
        release_ports(self._ports.values())

    async def restart(self) -> None:
        """A head crash: the dashboard goes away and comes back empty (no jobs, no Serve), same ports."""
        await self._shutdown()
        await self.start()

    @web.middleware
    async def _count_middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        route = request.match_info.route.resource
        self.requests[f"{request.method} {route.canonical if route is not None else request.path}"] += 1
        self.paths[f"{request.method} {request.path}"] += 1
        return await handler(request)

    @web.middleware
    async def _auth_middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._token is not None and request.path not in PUBLIC_PATHS:
            failure = auth_failure(request.headers, request.cookies, self._token)
            if failure is not None:
                return failure
        return await handler(request)

    @web.middleware
    async def _browser_middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if (
            is_browser_request(request.headers)
            and request.method not in BROWSER_METHODS
            and request.path != "/api/authenticate"
        ):
            return web.Response(
                status=405, text=f"'{request.method}' method not allowed for browser traffic."
            )
        return await handler(request)

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "version": DASHBOARD_API_VERSION,
                "ray_version": RAY_VERSION,
                "ray_commit": RAY_COMMIT,
                "session_name": self.session_name,
            }
        )

    async def _gcs_healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="success", content_type="application/text")

    async def _authentication_mode(self, request: web.Request) -> web.Response:
        return web.json_response({"authentication_mode": "token" if self._token else "disabled"})
