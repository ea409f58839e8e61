"""The workflow code calls nothing that differs between a run and its replay.

Workers run raypilot's workflow code without Temporal's sandbox (raypilot/workflow_runner.py), so nothing
stops a clock, random or environment read written in it (`OWN_PACKAGES`) at run time. The replay tests keep
the full sandbox for the paths their histories took; this scan holds all the code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from raypilot.workflow_runner import OWN_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
RANDOM_FUNCTIONS = ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform")
# Called as `module.attribute(...)`: what a workflow gets from `workflow.now()`, `workflow.random()`,
# `workflow.uuid4()` or an activity instead.
FORBIDDEN_CALLS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("time", "sleep"),
    ("uuid", "uuid1"),
    ("uuid", "uuid4"),
    ("os", "getenv"),
    ("os", "urandom"),
    ("secrets", "token_hex"),
    *(("random", name) for name in RANDOM_FUNCTIONS),
}
FORBIDDEN_NAMES = {("os", "environ")}
FORBIDDEN_BUILTINS = {"open", "input"}


def _dotted(node: ast.expr) -> tuple[str, str] | None:
    if isinstance(node, ast.Attribute):
        base = node.value
        if isinstance(base, ast.Name):
            return base.id, node.attr
        if isinstance(base, ast.Attribute):
            return base.attr, node.attr
    return None


def nondeterministic_uses(source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            called = _dotted(node.func)
            if called in FORBIDDEN_CALLS:
                found.append(f"{node.lineno}: {called[0]}.{called[1]}()")
            if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_BUILTINS:
                found.append(f"{node.lineno}: {node.func.id}()")
        elif isinstance(node, ast.Attribute) and _dotted(node) in FORBIDDEN_NAMES:
            found.append(f"{node.lineno}: os.environ")
    return found


def _sources() -> list[Path]:
    return sorted(path for package in OWN_PACKAGES for path in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda path: str(path.relative_to(ROOT)))
def test_passed_through_code_reads_no_clock_randomness_or_environment(path: Path) -> None:
    assert nondeterministic_uses(path.read_text()) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import datetime\nx = datetime.datetime.now()\n", ["2: datetime.now()"]),
        ("import time\ntime.sleep(1)\n", ["2: time.sleep()"]),
        ("import os\nx = os.environ['A']\n", ["2: os.environ"]),
        ("import random\nx = random.choice([1])\n", ["2: random.choice()"]),
        ("x = open('f')\n", ["1: open()"]),
        ("from temporalio import workflow\nx = workflow.now()\ny = workflow.random().random()\n", []),
        ("import random\ndef f(rand: random.Random) -> float:\n    return rand.random()\n", []),
    ],
)
def test_the_scan_finds_what_it_looks_for(source: str, expected: list[str]) -> None:
    assert nondeterministic_uses(source) == expected
