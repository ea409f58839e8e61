"""pytest fixtures: Temporal servers from the installed binaries and workers with fake activities.

- `time_skipping_env`: a fresh time-skipping test server per test (its clock is global to the server). A
  test stuck after that server showed its ACTIVITY_UNKNOWN defect (raypilot/testing/time_skipping.py)
  fails within seconds, and its report says why; it is not run again.
- `dev_server_env`: one dev server per session with raypilot's search attributes registered.
- `fake_worker`: `async with fake_worker(env.client, activities=[...]) as task_queue:` runs the real
  workflows with the given (fake) activities, registered under the real activity names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from raypilot.converter import raypilot_data_converter
from raypilot.search_attributes import ensure_search_attributes
from raypilot.testing.binaries import temporal_cli
from raypilot.testing.time_skipping import (
    SERVER_STARTUP_TIMEOUT,
    TEST_SERVER_DEFECT_WATCH,
    start_time_skipping_env,
)
from raypilot.testing.worker import running_worker
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES


@pytest.fixture
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_time_skipping_env()
    TEST_SERVER_DEFECT_WATCH.watch(env)
    try:
        await ensure_search_attributes(env.client, env.client.namespace)
        yield env
    finally:
        await TEST_SERVER_DEFECT_WATCH.unwatch()
        if not TEST_SERVER_DEFECT_WATCH.stopped_server:
            await env.shutdown()


DEFECT_SECTION = "time-skipping test server"
DEFECT_EXPLAINED = (
    "The time-skipping test server rejected a valid workflow task during this test (ACTIVITY_UNKNOWN: "
    "the task cancelled an activity that completed while the task ran; Temporal's server accepts it), and "
    "that workflow never ran again; its server was stopped so the test fails now rather than at its "
    "timeout. See raypilot/testing/time_skipping.py."
)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test that failed after the test server's defect says so in its report."""
    report = yield
    uses_the_test_server = "time_skipping_env" in getattr(item, "fixturenames", ())
    said = any(name == DEFECT_SECTION for name, _ in report.sections)
    if report.failed and uses_the_test_server and TEST_SERVER_DEFECT_WATCH.seen and not said:
        report.sections.append((DEFECT_SECTION, DEFECT_EXPLAINED))
    return report


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
