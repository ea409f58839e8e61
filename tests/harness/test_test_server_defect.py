"""The pytest plugin's answer to the time-skipping test server's ACTIVITY_UNKNOWN defect: a test that failed
after it is run again, a test that failed without it is not, and a test stuck on it fails fast instead of at
its timeout (raypilot/testing/time_skipping.py)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import asyncio
import logging

from raypilot.testing import time_skipping
from raypilot.testing.time_skipping import CORE_LOGGER, TEST_SERVER_DEFECT_MARK

time_skipping.DEFECT_GRACE_S = 0.5
RUNS: dict[str, int] = {}


def the_defect_shows() -> None:
    CORE_LOGGER.warning("Error while completing workflow activation: %s=7", TEST_SERVER_DEFECT_MARK)


def run_of(name: str) -> int:
    RUNS[name] = RUNS.get(name, 0) + 1
    return RUNS[name]


async def test_failing_once_after_the_defect(time_skipping_env):
    if run_of("once") == 1:
        the_defect_shows()
        await asyncio.sleep(0.1)  # the watch hears of it on the test's loop
        raise AssertionError("the workflow the test waits on is stuck")


async def test_stuck_after_the_defect(time_skipping_env):
    if run_of("stuck") == 1:
        the_defect_shows()
        for _ in range(100):  # as a test waiting on the stuck workflow: until its server is stopped
            await time_skipping_env.get_current_time()
            await asyncio.sleep(0.1)


async def test_failing_without_the_defect(time_skipping_env):
    run_of("plain")
    raise AssertionError("a real failure")


def test_runs():
    assert RUNS == {"once": 2, "stuck": 2, "plain": 1}
"""


def test_only_a_failure_after_the_test_server_defect_is_run_again(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = session\n"
        "asyncio_default_test_loop_scope = session\n"
    )
    pytester.makepyfile(test_defect=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1, warnings=2)
    result.stdout.fnmatch_lines(["*run 1 failed after the time-skipping test server rejected*"])
    result.stdout.fnmatch_lines(["FAILED test_defect.py::test_failing_without_the_defect*"])
