"""What stalls a test process's threads: a record of garbage collections and of moments no thread ran.

A workflow activation that misses Temporal's 2 s deadlock limit while its own work costs milliseconds was
held up by something else in its process: a full garbage collection (it runs in whichever thread allocates,
so the deadlock's stack names an innocent allocating frame), another thread holding the GIL, or a machine
with no CPU to give. With RAYPILOT_TEST_STALLS=<dir>, each pytest process appends to <dir>/<pid>.log:

- `gc`: every collection of the oldest generation over GC_REPORT_S, with its duration and object count;
- `stall`: every time a watchdog thread woke over STALL_REPORT_S late from a short sleep (no GIL or no CPU
  for that long), with the GC time inside the stall;
- `load`: the machine's 1-minute load average every LOAD_EVERY_S, to see what else ran beside;
- `cpu`: from the process leading the run, every LOAD_EVERY_S, the CPU seconds each program on the machine
  used since the last sample (tests/machine_cpu.py), to see what the load is made of;
- `file`: each test file's wall time on its worker, from its first test's setup to its last test's teardown
  (module fixtures included), to see which files make the run as long as it is;
- the test that was running at each.

`python -m tests.stalls <dir>` sums the logs up.

The remedy, `settle_heap`, runs after collection and after each test file: it collects what that file left
as garbage and freezes the survivors (imported modules, module-level tables), so a later full collection
scans only what the running file made. A full run without it logged collections of 0.4-3.2 s over 470,000-
730,000 objects in one worker, each a stall of every thread in the process.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.machine_cpu import ProgramCpu

GC_REPORT_S = 0.2
STALL_REPORT_S = 0.5
WATCHDOG_TICK_S = 0.05
LOAD_EVERY_S = 30.0
# Set in a process once it runs a test: a process that finds it set was started by a test.
_RUNS_TESTS = "RAYPILOT_TEST_STALLS_RUNS_TESTS"


class StallLog:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / f"{os.getpid()}.log"
        self._lock = threading.Lock()
        self.test = "(collection)"
        self._gc_started = 0.0
        self._gc_total = 0.0  # seconds of collection of any generation so far
        self._file: str | None = None
        self._file_started = 0.0
        # A pytest a test starts (the docs' RBAC exercises run test files under a ServiceAccount) logs here
        # too; its files run inside its parent's test, so they are set apart from the workers' own.
        nested = _RUNS_TESTS in os.environ
        self._worker = "nested" if nested else os.environ.get("PYTEST_XDIST_WORKER", "main")
        leads = not nested and "PYTEST_XDIST_WORKER" not in os.environ
        self._cpu = ProgramCpu() if leads else None

    def write(self, kind: str, seconds: float, detail: str) -> None:
        line = f"{time.time():.3f}\t{kind}\t{seconds:.3f}\t{self.test}\t{detail}\n"
        with self._lock, self._path.open("a") as file:
            file.write(line)

    def test_starts(self, nodeid: str) -> None:
        os.environ[_RUNS_TESTS] = "1"
        self.test = nodeid
        path = nodeid.split("::")[0]
        if path != self._file:
            self._file, self._file_started = path, time.perf_counter()

    def file_ends(self) -> None:
        took = time.perf_counter() - self._file_started
        self.write("file", took, f"{self._file}\tworker={self._worker}")
        self._file = None

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        took = time.perf_counter() - self._gc_started
        self._gc_total += took
        if info.get("generation") == 2 and took > GC_REPORT_S:
            objects = len(gc.get_objects(generation=2))
            self.write(
                "gc",
                took,
                f"objects={objects} frozen={gc.get_freeze_count()} collected={info.get('collected')}",
            )

    def watch(self) -> None:
        next_load = time.perf_counter()
        while True:
            if time.perf_counter() >= next_load:
                self.write("load", os.getloadavg()[0], "")
                for program, seconds in (self._cpu.sample() if self._cpu else {}).items():
                    self.write("cpu", seconds, program)
                next_load += LOAD_EVERY_S
            gc_before, before = self._gc_total, time.perf_counter()
            time.sleep(WATCHDOG_TICK_S)
            late = time.perf_counter() - before - WATCHDOG_TICK_S
            if late > STALL_REPORT_S:
                gc_inside = self._gc_total - gc_before
                self.write("stall", late, f"gc_inside={gc_inside:.3f} load={os.getloadavg()[0]:.1f}")


def settle_heap() -> None:
    """Collect now, then keep every surviving object out of later collections (gc.freeze)."""
    gc.collect()
    gc.freeze()


def install(directory: Path) -> StallLog:
    log = StallLog(directory)
    gc.callbacks.append(log.on_gc)
    threading.Thread(target=log.watch, name="stall-watchdog", daemon=True).start()
    return log


def summary(directory: Path) -> str:
    rows = [line.rstrip("\n").split("\t") for path in directory.glob("*.log") for line in path.open()]
    lines = [f"{len(rows)} records in {directory}"]
    loads = [float(row[2]) for row in rows if row[1] == "load"]
    if loads:
        mean = sum(loads) / len(loads)
        lines.append(
            f"load average (1 min, sampled every {LOAD_EVERY_S:.0f} s): mean {mean:.1f}, max {max(loads):.1f}"
        )
    for kind in ("gc", "stall"):
        of_kind = sorted((row for row in rows if row[1] == kind), key=lambda row: -float(row[2]))
        total = sum(float(row[2]) for row in of_kind)
        lines.append(f"{kind}: {len(of_kind)}, {total:.1f} s in all; longest:")
        lines += [f"  {row[2]} s  {row[3]}  {row[4]}" for row in of_kind[:15]]
        by_test = Counter(row[3].split("::")[0] for row in of_kind)
        lines.append(f"  by file: {by_test.most_common(8)}")
    return "\n".join(lines + _cpu_summary(rows) + _files_summary(rows))


def _cpu_summary(rows: list[list[str]]) -> list[str]:
    """The CPU the run used, against what the machine has, and the programs that used the most."""
    cpu = [row for row in rows if row[1] == "cpu"]
    if not cpu:
        return []
    by_program: Counter[str] = Counter()
    for row in cpu:
        by_program[row[4]] += float(row[2])
    times = [float(row[0]) for row in rows]
    available = (max(times) - min(times)) * (os.cpu_count() or 1)
    used = sum(by_program.values())
    share = used / available if available else 0.0
    lines = [f"CPU: {used:.0f} s used of the {available:.0f} s the machine had ({share:.0%}); by program:"]
    lines += [f"  {seconds:7.0f} s  {program}" for program, seconds in by_program.most_common(15)]
    return lines


def _files_summary(rows: list[list[str]]) -> list[str]:
    """Each worker's share of the run (its files' wall time, and when its last file ended) and the longest
    files: what a shorter run would have to move or shorten."""
    files = [row for row in rows if row[1] == "file" and row[5] != "worker=nested"]
    if not files:
        return []
    started = min(float(row[0]) for row in rows)
    lines = ["test files, by worker (seconds from the first record):"]
    for worker in sorted({row[5] for row in files}):
        mine = [row for row in files if row[5] == worker]
        busy = sum(float(row[2]) for row in mine)
        end = max(float(row[0]) for row in mine) - started
        lines.append(f"  {worker}: {len(mine)} files, {busy:.0f} s in files, the last ended at {end:.0f} s")
    lines.append("longest files:")
    longest = sorted(files, key=lambda row: -float(row[2]))[:20]
    lines += [f"  {float(row[2]):7.1f} s  {row[4]}  {row[5]}" for row in longest]
    return lines


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
