"""pytest fixtures: Temporal servers from the installed binaries and workers with fake activities.

- `time_skipping_env`: a fresh time-skipping test server per test (its clock is global to the server). A
  test that fails after that server showed its ACTIVITY_UNKNOWN defect (raypilot/testing/time_skipping.py)
  is run again, at most `ATTEMPTS_WITH_TEST_SERVER_DEFECT` times in all, with a warning saying so.
- `dev_server_env`: one dev server per session with raypilot's search attributes registered.
- `fake_worker`: `async with fake_worker(env.client, activities=[...]) as task_queue:` runs the real
  workflows with the given (fake) activities, registered under the real activity names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from _pytest.runner import runtestprotocol
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


ATTEMPTS_WITH_TEST_SERVER_DEFECT = 3


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Runs a test on the time-skipping server again when it failed after the server's defect showed; the
    reports of the runs before the last are dropped (a warning names the test)."""
    if "time_skipping_env" not in getattr(item, "fixturenames", ()):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(1, ATTEMPTS_WITH_TEST_SERVER_DEFECT + 1):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        failed = any(report.failed for report in reports)
        if not (failed and TEST_SERVER_DEFECT_WATCH.seen) or attempt == ATTEMPTS_WITH_TEST_SERVER_DEFECT:
            break
        item.warn(
            pytest.PytestWarning(
                f"run {attempt} failed after the time-skipping test server rejected a valid workflow task "
                "(ACTIVITY_UNKNOWN, a defect of the test server); running the test again"
            )
        )
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


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
