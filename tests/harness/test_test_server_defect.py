"""The pytest plugin's answer to the time-skipping test server's ACTIVITY_UNKNOWN defect: a test stuck on it
fails fast instead of at its timeout, its report says why, and no test is run again
(raypilot/testing/time_skipping.py)."""

from __future__ import annotations

import re

import pytest

from raypilot.testing.plugin import DEFECT_EXPLAINED, DEFECT_SECTION

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


async def test_stuck_after_the_defect(time_skipping_env):
    run_of("stuck")
    the_defect_shows()
    for _ in range(100):  # as a test waiting on the stuck workflow: until its server is stopped
        await time_skipping_env.get_current_time()
        await asyncio.sleep(0.1)


async def test_passing_despite_the_defect(time_skipping_env):
    run_of("unaffected")
    the_defect_shows()
    await asyncio.sleep(0.1)  # the watch hears of it on the test's loop


async def test_failing_without_the_defect(time_skipping_env):
    run_of("plain")
    raise AssertionError("a real failure")


def test_runs():
    assert RUNS == {"stuck": 1, "unaffected": 1, "plain": 1}
"""


def test_a_test_stuck_on_the_test_server_defect_fails_fast_saying_why(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = session\n"
        "asyncio_default_test_loop_scope = session\n"
    )
    pytester.makepyfile(test_defect=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "raypilot.testing.plugin"
    )
    result.assert_outcomes(passed=2, failed=2)
    failures = failure_reports(result.stdout.str())
    assert set(failures) == {"test_stuck_after_the_defect", "test_failing_without_the_defect"}
    assert f"- {DEFECT_SECTION} -" in failures["test_stuck_after_the_defect"]
    assert DEFECT_EXPLAINED in failures["test_stuck_after_the_defect"]
    assert DEFECT_SECTION not in failures["test_failing_without_the_defect"]


def failure_reports(output: str) -> dict[str, str]:
    """Each failed test's report in pytest's output, by test name."""
    failures = output[output.index("= FAILURES =") : output.index("short test summary info")]
    parts = re.split(r"^_+ (\w+) _+$", failures, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))
