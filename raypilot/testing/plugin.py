"""pytest fixtures: Temporal servers from the installed binaries and workers with fake activities.

- `time_skipping_env`: a fresh time-skipping test server per test (its clock is global to the server).
- `dev_server_env`: one dev server per session with raypilot's search attributes registered.
- `fake_worker`: `async with fake_worker(env.client, activities=[...]) as task_queue:` runs the real
  workflows with the given (fake) activities, registered under the real activity names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from raypilot.converter import raypilot_data_converter
from raypilot.search_attributes import ensure_search_attributes
from raypilot.testing.binaries import temporal_cli
from raypilot.testing.time_skipping import SERVER_STARTUP_TIMEOUT, start_time_skipping_env
from raypilot.testing.worker import running_worker
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES


@pytest.fixture
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_time_skipping_env()
    try:
        await ensure_search_attributes(env.client, env.client.namespace)
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
async def dev_server_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(),
        data_converter=raypilot_data_converter,
        search_attributes=ALL_SEARCH_ATTRIBUTES,
        dev_server_log_level="error",
        dev_server_startup_timeout=SERVER_STARTUP_TIMEOUT,
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
def fake_worker() -> Callable[..., AbstractAsyncContextManager[str]]:
    def start(client: Any, **kwargs: Any) -> AbstractAsyncContextManager[str]:
        return running_worker(client, **kwargs)

    return start
