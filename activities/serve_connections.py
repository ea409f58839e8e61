"""Kept-alive client connections closed gracefully by a draining RayCluster's Serve proxies (issue #16).

Behind a Kubernetes Service (L4) a kept-alive HTTP/1.1 connection stays on the Pod it was opened to: after a
blue-green switch a busy client keeps sending to the old cluster until that cluster is deleted, and the
requests in flight then fail ("Server disconnected without sending a response"). Ray 2.60 has no switch for
this: a Serve proxy drains only when its node loses its replicas (never the head's, and draining only fails
its health check), `keep_alive_timeout_s` closes idle connections only, and the proxy never starts its
uvicorn server's graceful shutdown.

So this activity submits a tiny driver through the dashboard's Jobs API that runs a closure in every Serve
proxy actor (Ray's developer API `__ray_call__`, present on every actor): for `seconds`, every 10 ms, each
connection of the proxy's uvicorn server that has a response under way is marked not to be kept alive, as
uvicorn's own graceful shutdown does. uvicorn then adds `Connection: close` to that response (or, if its
headers went already, closes the connection once the response is complete), so the client sends its next
request on a new connection, which the Service opens on the new cluster. Nothing is cut: idle connections are
left alone (a client that sends again is answered, with `Connection: close`), responses finish. The driver
prints how many HTTP servers it reached; the job record is deleted afterwards.

It reaches into Ray's developer API and uvicorn's per-connection state (`server_state.connections`,
`cycle.keep_alive`), neither a supported interface, so it runs only on the Ray and uvicorn releases it was
tested on (`TESTED_RAY`, `TESTED_UVICORN`: the driver reads `ray.__version__` and `uvicorn.__version__` before
anything else, and each proxy its own uvicorn's): on any other the driver reaches nothing and only reports
"unsupported Ray <version>". That, or a driver that fails or reaches no server, is answered in `error`
(nothing is retried, nothing else changes: the drain goes on without it, and kept-alive connections stay
open until the deletion).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Final

from activities.dashboard_client import DashboardClient
from activities.driver_jobs import DriverJobKind, run_driver_job
from wire import stubs
from wire.drain import CloseServeConnections, ServeConnectionsClosing
from wire.stubs.common import implements

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

__all__ = [
    "CLOSING_MARKER",
    "TESTED_RAY",
    "TESTED_UVICORN",
    "UNSUPPORTED_MARKER",
    "ServeConnectionActivities",
    "close_connections_entrypoint",
    "closing_answer",
    "parse_closing_output",
    "parse_unsupported_output",
    "release_series",
]

CLOSING_MARKER: Final = "RAYPILOT_SERVE_CONNECTIONS_CLOSING "
UNSUPPORTED_MARKER: Final = "RAYPILOT_SERVE_CONNECTIONS_UNSUPPORTED "
# The release series (major.minor) the driver was tested on, on real Ray Serve
# (tests/integration/test_rayservice_bluegreen.py and test_rayservice_incremental.py, with the Ray of
# requirements.lock). Add one only after those tests passed on it: a proxy built otherwise may keep the
# names and change what they mean.
TESTED_RAY: Final = ("2.60",)
TESTED_UVICORN: Final = ("0.54",)
CLOSING_JOB: Final = DriverJobKind(
    activity="CloseServeConnections",
    label="connection-closing",
    metadata={"raypilot": "close-serve-connections"},
    lost_type="ClosingJobLost",
)
# The driver. `mark` runs on the proxy's event loop (uvicorn's state is not thread-safe), found from the
# proxy's server task when the closure is not called on the loop's thread.
CLOSING_DRIVER: Final = """
import sys

import ray

SECONDS = float(sys.argv[1])
TESTED_RAY = __TESTED_RAY__
TESTED_UVICORN = __TESTED_UVICORN__


def series(version):
    return ".".join(version.split(".")[:2])


try:
    import uvicorn

    UVICORN = uvicorn.__version__
except ImportError:
    UVICORN = "missing"
if series(ray.__version__) not in TESTED_RAY or series(UVICORN) not in TESTED_UVICORN:
    print("RAYPILOT_SERVE_CONNECTIONS_UNSUPPORTED", "Ray", ray.__version__, "uvicorn", UVICORN)
    sys.exit(0)

from ray.serve._private.constants import SERVE_NAMESPACE, SERVE_PROXY_NAME


def close_after_responses(proxy, seconds, tested_uvicorn):
    import asyncio
    import gc
    import time

    import uvicorn

    if ".".join(uvicorn.__version__.split(".")[:2]) not in tested_uvicorn:
        return 0
    servers = [found for found in gc.get_objects() if isinstance(found, uvicorn.Server)]
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = proxy._running_http_server_task.get_loop()
    until = time.monotonic() + seconds

    def mark():
        for server in servers:
            for connection in list(server.server_state.connections):
                cycle = getattr(connection, "cycle", None)
                if cycle is not None and not cycle.response_complete:
                    cycle.keep_alive = False
        if time.monotonic() < until:
            loop.call_later(0.01, mark)

    loop.call_soon_threadsafe(mark)
    return len(servers)


ray.init(log_to_driver=False)
proxies = [
    ray.get_actor(actor["name"], namespace=SERVE_NAMESPACE)
    for actor in ray.util.list_named_actors(all_namespaces=True)
    if actor["namespace"] == SERVE_NAMESPACE and actor["name"].startswith(SERVE_PROXY_NAME)
]
calls = [proxy.__ray_call__.remote(close_after_responses, SECONDS, TESTED_UVICORN) for proxy in proxies]
servers = sum(ray.get(calls))
print("RAYPILOT_SERVE_CONNECTIONS_CLOSING", servers)
""".replace("__TESTED_RAY__", repr(TESTED_RAY)).replace("__TESTED_UVICORN__", repr(TESTED_UVICORN))


def release_series(version: str) -> str:
    """The major.minor of a release (as the driver compares it): "2.60" for "2.60.1"."""
    return ".".join(version.split(".")[:2])


def close_connections_entrypoint(seconds: float) -> str:
    return f"python -c {shlex.quote(CLOSING_DRIVER)} {seconds:.0f}"


def parse_closing_output(logs: str) -> int | None:
    """The number of HTTP servers on the driver's last marker line; None without one."""
    lines = [line for line in logs.splitlines() if line.startswith(CLOSING_MARKER)]
    if not lines:
        return None
    raw = lines[-1][len(CLOSING_MARKER) :].strip()
    return int(raw) if raw.isdigit() else None


def parse_unsupported_output(logs: str) -> str | None:
    """The releases the driver found when they are not the tested ones, e.g. "Ray 2.61.0, uvicorn 0.54.0";
    None when it did not say so."""
    lines = [line for line in logs.splitlines() if line.startswith(UNSUPPORTED_MARKER)]
    if not lines:
        return None
    words = lines[-1][len(UNSUPPORTED_MARKER) :].split()
    return ", ".join(" ".join(words[index : index + 2]) for index in range(0, len(words), 2))


def closing_answer(succeeded: bool, logs: str) -> ServeConnectionsClosing | None:
    """What the driver's log answers: the HTTP servers it reached, or why it reached none on purpose (an
    untested release); None when it gave no answer (the job's failure says why)."""
    unsupported = parse_unsupported_output(logs) if succeeded else None
    if unsupported is not None:
        tested = f"Ray {' or '.join(TESTED_RAY)} with uvicorn {' or '.join(TESTED_UVICORN)}"
        error = f"unsupported {unsupported}: the connection-closing job changes nothing, tested on {tested}"
        return ServeConnectionsClosing(0, error)
    servers = parse_closing_output(logs) if succeeded else None
    return ServeConnectionsClosing(servers) if servers else None


class ServeConnectionActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @implements(stubs.close_serve_connections)
    async def close_serve_connections(self, request: CloseServeConnections) -> ServeConnectionsClosing:
        """Submit the driver (a submission id that exists already is this call's own job), poll it until
        terminal (heartbeating), read its log, delete its record. A job that failed is answered with
        `error`, not raised: retrying would not help, and the drain goes on without it."""
        client = await DashboardClient.open(self.dependencies, request.target)
        entrypoint = close_connections_entrypoint(request.seconds)
        run = await run_driver_job(
            client, CLOSING_JOB, entrypoint, request.submission_id, request.poll_seconds
        )
        answered = closing_answer(run.info.status == "SUCCEEDED", run.logs)
        return answered or ServeConnectionsClosing(0, run.failure(client))
