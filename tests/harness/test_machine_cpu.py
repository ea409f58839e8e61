"""tests/machine_cpu.py: programs named as the CPU summary shows them, and a busy process's CPU counted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import stalls
from tests.machine_cpu import ProgramCpu, program_of


@pytest.mark.parametrize(
    ("comm", "argv", "expected"),
    [
        ("raylet", ["/venv/lib/ray/core/src/ray/raylet/raylet", "--node_id=x"], "raylet"),
        ("kube-apiserver", ["kube-apiserver", "--etcd-servers=x"], "kube-apiserver"),
        (
            "python3",
            ["/venv/bin/python3", "-m", "sandbox.nodeagent", "--dir", "d"],
            "python -m sandbox.nodeagent",
        ),
        ("python3", ["python3", "-u", "-X", "dev", "worker.py"], "python worker.py"),
        ("python", ["python", "/venv/ray/dashboard/dashboard.py", "--host=x"], "python dashboard.py"),
        ("python3", ["/venv/bin/python3", "-c", "import sys;exec(...)"], "python -c"),
        ("python3", ["python3"], "python"),
        ("python3", [], "python3"),  # a zombie: no command line left
    ],
)
def test_a_process_is_named_by_its_command_or_what_python_runs(
    comm: str, argv: list[str], expected: str
) -> None:
    assert program_of(comm, argv) == expected


BUSY = """
import sys, time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
sys.stdin.read()
"""


def test_a_busy_process_started_after_the_first_sample_is_counted(tmp_path: Path) -> None:
    cpu = ProgramCpu()
    cpu.sample()  # the first sample only marks the start
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    busy = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE)
    used, deadline = 0.0, time.monotonic() + 30
    try:
        while used < 0.25 and time.monotonic() < deadline:
            time.sleep(0.1)
            used += cpu.sample().get("python busy.py", 0.0)
    finally:
        busy.kill()
        busy.wait()
    assert 0.25 <= used < 1.0


def test_the_run_summary_shows_the_machines_share_and_the_busiest_programs(tmp_path: Path) -> None:
    records = [
        ("100.0", "load", "3.0", ""),
        ("130.0", "cpu", "12.5", "raylet"),
        ("130.0", "cpu", "2.5", "python -c"),
        ("160.0", "cpu", "10.0", "raylet"),
    ]
    (tmp_path / "1.log").write_text("".join(f"{t}\t{kind}\t{s}\ttest\t{d}\n" for t, kind, s, d in records))
    report = stalls.summary(tmp_path).splitlines()
    cores = os.cpu_count() or 1
    start = report.index(next(line for line in report if line.startswith("CPU:")))
    assert report[start : start + 3] == [
        f"CPU: 25 s used of the {60 * cores} s the machine had ({25 / (60 * cores):.0%}); by program:",
        "       22 s  raylet",
        "        2 s  python -c",
    ]
