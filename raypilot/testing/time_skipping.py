"""Temporal's time-skipping test server, started with a client that does not send HTTP/2 keepalive pings.

The test server answers `env.sleep` only once its clock has passed the sleep's end, and the clock does not
move while a workflow task is in flight. On a loaded machine one sleep can therefore take minutes of real
time, with no byte from the server on the connection meanwhile. The SDK's client pings every 30 s; the test
server's gRPC layer allows a ping only every 5 minutes while nothing is sent, and after the third ping in
~90 s it closes the connection, failing every call on it ("h2 protocol error" / "transport error").
Measured: a sleep held for 150 s by a time-skipping lock fails after 90 s with the pings and returns after
150 s without them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta

import temporalio.client
import temporalio.service
from temporalio.converter import DataConverter
from temporalio.runtime import Runtime
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


async def start_time_skipping_env(
    data_converter: DataConverter = raypilot_data_converter, runtime: Runtime | None = None
) -> WorkflowEnvironment:
    """A fresh time-skipping test server from the installed binary (raypilot's data converter by default)."""
    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=temporal_test_server(),
        data_converter=data_converter,
        runtime=runtime,
        plugins=[WithoutKeepAlivePings()],
        test_server_startup_timeout=SERVER_STARTUP_TIMEOUT,
    )
