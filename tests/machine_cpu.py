"""Where a test run's CPU goes, by program: sampled from /proc by the process that leads the run (pytest's
own, or xdist's controller), summed up at the end (tests/stalls.py). It tells which parts of the suite load
the machine (real Ray heads, the real control plane, dev servers, the pytest workers themselves), so a budget
of what runs at once can be set from measurements.

A process is named by its command, except Python, which is named by what it runs (`-m module`, a script's
name, or `-c` for pytest-xdist's workers). CPU a process used after the last sample before it ended is not
counted (short-lived commands such as kubectl are undercounted)."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

__all__ = ["ProgramCpu", "program_of"]

_TICKS = os.sysconf("SC_CLK_TCK")


def program_of(comm: str, argv: list[str]) -> str:
    """A process's name for the summary: its command, or for Python what it runs."""
    if not comm.startswith("python") or not argv:
        return comm
    arguments = argv[1:]
    while arguments and arguments[0].startswith("-") and arguments[0] not in ("-m", "-c"):
        # interpreter options: -u, -I, ...; -X and -W take a value
        arguments = arguments[2:] if arguments[0] in ("-X", "-W") else arguments[1:]
    if not arguments:
        return "python"
    if arguments[0] == "-m" and len(arguments) > 1:
        return f"python -m {arguments[1]}"
    if arguments[0] == "-c":
        return "python -c"
    return f"python {Path(arguments[0]).name}"


def _read(pid: str) -> tuple[str, float] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    seconds = (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
    return program_of(comm, [part.decode(errors="replace") for part in argv if part]), seconds


class ProgramCpu:
    """CPU seconds by program since the first sample."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}  # pid -> its CPU seconds at the last sample
        self._first = True

    def sample(self) -> dict[str, float]:
        """The CPU seconds each program used since the last sample (at the first: none; every running
        process's earlier CPU is not this run's)."""
        used: dict[str, float] = defaultdict(float)
        seen: dict[str, float] = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            found = _read(pid)
            if found is None:
                continue
            program, seconds = found
            seen[pid] = seconds
            if not self._first:
                used[program] += seconds - self._seen.get(pid, 0.0)
        self._seen, self._first = seen, False
        return {program: seconds for program, seconds in used.items() if seconds > 0}
