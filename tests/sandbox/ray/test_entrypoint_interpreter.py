"""Table tests for the simulated dashboard's entrypoint interpreter."""

from __future__ import annotations

import pytest

from sandbox.ray.simulated_entrypoint import plan_entrypoint

COMMAND_S = 0.5


@pytest.mark.parametrize(
    ("entrypoint", "outputs", "exit_code", "duration_s"),
    [
        ("echo hello", ["hello"], 0, 0.0),
        ("exit 3", [], 3, 0.0),
        ("echo hello; exit 3", ["hello"], 3, 0.0),
        ("sleep 2; exit 3", [], 3, 2.0),
        ("sleep 0.5 && echo done", ["done"], 0, 0.5),
        ("false && echo skipped", [], 1, 0.0),
        ("false || echo fallback", ["fallback"], 0, 0.0),
        ("true; false", [], 1, 0.0),
        ("exit 1; echo never", [], 1, 0.0),
        ("exit 300", [], 44, 0.0),  # exit status is taken modulo 256, as by a shell
        ('echo "a;b"', ["a;b"], 0, 0.0),  # quoted operators are text
        ("echo a\necho b", ["a", "b"], 0, 0.0),  # newlines separate commands
        ("python train.py --epochs 3", [], 0, COMMAND_S),  # unknown commands succeed
        ("python -c \"print('from python')\"", ["from python"], 0, COMMAND_S),
        ("python -c 'import sys; print(1); sys.exit(2)'", ["1"], 2, COMMAND_S),
        ("python3 -c 'import time; time.sleep(1)'", [], 0, COMMAND_S + 1.0),
        (
            "python -c 'raise ValueError(\"boom\")'",
            ["Traceback (most recent call last):", "ValueError('boom')"],
            1,
            COMMAND_S,
        ),
        ("python -c 'import sys; sys.exit(\"fatal\")'", ["fatal"], 1, COMMAND_S),
        ("python -c 'if 1:\n    print(2)\nprint(3)'", ["3"], 0, COMMAND_S),  # only top-level calls are read
        ("python -c 'print('", ["SyntaxError: '(' was never closed"], 1, COMMAND_S),
        ('echo "unterminated', ["sh: 1: Syntax error: Unterminated quoted string"], 2, 0.0),
        ("", [], 0, 0.0),
        ("sh -c 'echo hi; exit 3'", ["hi"], 3, 0.0),  # how `ray job submit -- sh -c ...` arrives
        ("bash -c 'exit 2'; echo after", ["after"], 0, 0.0),  # exit ends only the inner shell
        ("/bin/sh -c 'sleep 1 && false'", [], 1, 1.0),
    ],
)
def test_plan_entrypoint(entrypoint: str, outputs: list[str], exit_code: int, duration_s: float) -> None:
    plan = plan_entrypoint(entrypoint, command_s=COMMAND_S)
    assert [step.output for step in plan.steps if step.output is not None] == outputs
    assert plan.exit_code == exit_code
    assert plan.duration_s == pytest.approx(duration_s)


def test_sleep_scale_compresses_sleeps_only() -> None:
    plan = plan_entrypoint("sleep 10; python job.py", command_s=0.1, sleep_scale=0.01)
    assert plan.duration_s == pytest.approx(0.1 + 0.1)
