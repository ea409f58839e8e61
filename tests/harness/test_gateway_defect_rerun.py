"""tests/gateway_defect_rerun.py: a marked test that failed on the simulated Gateway's empty-table 404 is run
once more; a marked test that failed otherwise, an unmarked one, or the same 404 twice, is not passed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
REPOSITORY = Path(__file__).resolve().parents[2]

TESTS = """
import pytest

RUNS: dict[str, int] = {}
DEFECT = "HTTP 404 'no route matches this path (0 routes, listener of gateway ns/rs-gateway of controller 1'"


def run_of(name: str) -> int:
    RUNS[name] = RUNS.get(name, 0) + 1
    return RUNS[name]


@pytest.mark.rerun_on_simulated_gateway_defect
def test_defect_once():
    if run_of("once") == 1:
        raise AssertionError(f"2 of 900 failed: [{DEFECT!r}]")


@pytest.mark.rerun_on_simulated_gateway_defect
def test_defect_every_time():
    run_of("always")
    raise AssertionError(f"2 of 900 failed: [{DEFECT!r}]")


@pytest.mark.rerun_on_simulated_gateway_defect
def test_other_failure():
    run_of("other")
    raise AssertionError("HTTP 502 backend unreachable")


def test_unmarked_defect():
    run_of("unmarked")
    raise AssertionError(f"2 of 900 failed: [{DEFECT!r}]")


def test_runs():
    assert RUNS == {"once": 2, "always": 2, "other": 1, "unmarked": 1}
"""


def test_only_a_marked_test_failing_on_the_gateway_defect_is_run_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPOSITORY))  # the plugin is `tests.gateway_defect_rerun`
    pytester.makepyfile(test_gateway=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "tests.gateway_defect_rerun"
    )
    result.assert_outcomes(passed=2, failed=3, warnings=2)
    result.stdout.fnmatch_lines(["*run 1 failed on the simulated Gateway's empty route table*"])
    result.stdout.fnmatch_lines(["FAILED test_gateway.py::test_defect_every_time*"])
