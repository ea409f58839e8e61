"""Temporal's time-skipping test server, started with a client that does not send HTTP/2 keepalive pings.

The test server answers `env.sleep` only once its clock has passed the sleep's end, and while a workflow task
or an activity is in flight the clock moves only at wall-clock speed. On a loaded machine one sleep can
therefore take minutes of real time, with no byte from the server on the connection meanwhile. The SDK's
client pings every 30 s; the test server's gRPC layer allows a ping only every 5 minutes while nothing is
sent, and after the third ping in ~90 s it closes the connection, failing every call on it ("h2 protocol
error" / "transport error"). Measured: a sleep held for 150 s by a time-skipping lock fails after 90 s with
the pings and returns after 150 s without them.

The test server also rejects a workflow task in one race that the real server handles: the task cancels an
activity that completed while the task ran. The real server accepts the cancellation (it finds the buffered
completion); the test server fails the task with "ACTIVITY_UNKNOWN for scheduledEventId=N", after which that
workflow's task never times out and never runs again, and the server's clock only moves at wall-clock speed.
A test waiting on that workflow then hangs until its timeout. It was seen in about one run in eight of a
rollout-plan rollback test, whose fake Serve wait retried on a 30 s grid and so answered at the very instant
the 1 min pause before the gate ended; the fake world's waits now retry off any whole-second grid
(`raypilot.testing.rayservice_world_state.off_the_grid`), as a real watch answers at no set instant.
`TestServerDefectWatch` reads the worker's warning about that rejection; the pytest plugin then stops that
server after a grace, so the test fails at once, and adds the reason to its report
(`raypilot.testing.plugin`). It is not run again: a test whose fakes make the race likely is to be changed.

And the test server can leave a query unanswered until its 30 s query deadline, where the same query asked
again is answered at once: every time for a RayService run that continues as new while the query arrives
(the new run answers), and for a RayJob admitted from its queue a moment before (10 s of one such query in
an admission test that took 13 s). `query_status` asks for a status 5 s at a time, up to the same 30 s in
all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import temporalio.client
import temporalio.service
from temporalio.client import WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)
from temporalio.testing import WorkflowEnvironment

from raypilot.converter import raypilot_data_converter
from raypilot.testing.binaries import temporal_test_server

# The SDK waits 5 s for a server to answer; a loaded machine (or several pytest-xdist workers starting at
# once) needs longer.
SERVER_STARTUP_TIMEOUT = timedelta(seconds=60)


class WithoutKeepAlivePings(temporalio.client.Plugin):
    """Connects the client without HTTP/2 keepalive pings (the server is a local process: a dead one closes
    its socket, which the client sees without pings)."""

    def configure_client(self, config: temporalio.client.ClientConfig) -> temporalio.client.ClientConfig:
        return config

    async def connect_service_client(
        self,
        config: temporalio.service.ConnectConfig,
        next: Callable[[temporalio.service.ConnectConfig], Awaitable[temporalio.service.ServiceClient]],
    ) -> temporalio.service.ServiceClient:
        return await next(replace(config, keep_alive_config=None))


# The worker's warning when the test server rejected a workflow task for cancelling a completed activity.
TEST_SERVER_DEFECT_MARK = "ACTIVITY_UNKNOWN for scheduledEventId"
# How long a test may go on after that rejection before its server is stopped (so that it fails at once
# instead of at its timeout); a test that no longer needed the stuck workflow finishes well within it.
DEFECT_GRACE_S = 20.0
CORE_LOGGER = logging.getLogger("raypilot.testing.temporal_core")
log = logging.getLogger(__name__)


class TestServerDefectWatch(logging.Handler):
    """Notices the test server's ACTIVITY_UNKNOWN rejection (above) while an environment is watched, and
    stops that environment's server if the test has not finished `DEFECT_GRACE_S` later."""

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self._watched: tuple[WorkflowEnvironment, asyncio.AbstractEventLoop] | None = None
        self._stopper: asyncio.Future[None] | None = None
        self.seen = False
        self.stopped_server = False

    def watch(self, env: WorkflowEnvironment) -> None:
        self._watched = (env, asyncio.get_running_loop())
        self._stopper = None
        self.seen = self.stopped_server = False

    async def unwatch(self) -> None:
        self._watched = None
        if self._stopper is not None:
            self._stopper.cancel()
            await asyncio.gather(self._stopper, return_exceptions=True)

    def emit(self, record: logging.LogRecord) -> None:
        watched = self._watched
        if watched is None or TEST_SERVER_DEFECT_MARK not in record.getMessage():
            return
        env, loop = watched
        loop.call_soon_threadsafe(self._noticed, env)

    def _noticed(self, env: WorkflowEnvironment) -> None:
        self.seen = True
        if self._stopper is None and self._watched is not None:
            self._stopper = asyncio.ensure_future(self._stop_after_grace(env))

    async def _stop_after_grace(self, env: WorkflowEnvironment) -> None:
        await asyncio.sleep(DEFECT_GRACE_S)
        log.warning(
            "the time-skipping test server rejected a valid workflow task (ACTIVITY_UNKNOWN); stopping it"
        )
        self.stopped_server = True
        await env.shutdown()


TEST_SERVER_DEFECT_WATCH = TestServerDefectWatch()
CORE_LOGGER.addHandler(TEST_SERVER_DEFECT_WATCH)
_runtime: Runtime | None = None


def logging_runtime() -> Runtime:
    """One SDK runtime for the tests' time-skipping servers: the default one, but with the SDK core's
    warnings forwarded to Python logging (CORE_LOGGER), where `TestServerDefectWatch` reads them."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                    forwarding=LogForwardingConfig(logger=CORE_LOGGER),
                )
            )
        )
    return _runtime


async def start_time_skipping_env(
    data_converter: DataConverter = raypilot_data_converter, runtime: Runtime | None = None
) -> WorkflowEnvironment:
    """A fresh time-skipping test server from the installed binary (raypilot's data converter by default)."""
    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=temporal_test_server(),
        data_converter=data_converter,
        runtime=runtime or logging_runtime(),
        plugins=[WithoutKeepAlivePings()],
        test_server_startup_timeout=SERVER_STARTUP_TIMEOUT,
    )


QUERY_ASK = timedelta(seconds=5)
QUERY_ASKS = 6  # the server's own query deadline (30 s) in all
_UNANSWERED = (temporalio.service.RPCStatusCode.DEADLINE_EXCEEDED, temporalio.service.RPCStatusCode.CANCELLED)


async def query_status(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """The workflow's `status` query, asked again while unanswered (QUERY_ASK each time, QUERY_ASKS times)."""
    for _ in range(QUERY_ASKS - 1):
        try:
            return await _ask_status(handle)
        except temporalio.service.RPCError as error:
            if error.status not in _UNANSWERED:
                raise
    return await _ask_status(handle)


async def _ask_status(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    status: dict[str, Any] = await handle.query("status", rpc_timeout=QUERY_ASK)
    return status
