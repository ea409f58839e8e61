"""Stopping a process tree by PID: every process of a session, including ones that left the process group.

`ray start --head` is started as the leader of a new session. Ray's raylet puts each worker in a process
group of its own, so a group kill misses the Serve controller, proxies and replicas; but they all keep the
session id, even when they are re-parented after the raylet dies. This never matches processes by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

_PROC = Path("/proc")


def stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (which may contain spaces and parentheses):
    [0] state, [1] ppid, [2] pgrp, [3] session, ... [11] utime, [12] stime, [13] cutime, [14] cstime.
    OSError once the process is gone."""
    stat = (_PROC / str(pid) / "stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()


def every_process_stat() -> Iterator[tuple[int, list[str]]]:
    """(pid, `stat_fields`) of every process that is still there when its turn comes."""
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = stat_fields(entry.name)
        except OSError:
            continue  # exited while we looked
        yield int(entry.name), fields


def session_members(session_id: int) -> list[int]:
    """PIDs of the live (non-zombie) processes whose session id is `session_id`."""
    return sorted(
        pid
        for pid, fields in every_process_stat()
        if len(fields) >= 4 and fields[0] != "Z" and int(fields[3]) == session_id
    )


def _signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


async def stop_session(session_id: int, *, grace_s: float, poll_s: float = 0.05) -> None:
    """SIGTERM every process of the session, then SIGKILL what is left after `grace_s` seconds."""
    _signal_all(session_members(session_id), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not session_members(session_id):
            return
        await asyncio.sleep(poll_s)
    # Processes may still be spawning children while others exit; repeat until the session is empty.
    kill_deadline = time.monotonic() + 10.0
    while (members := session_members(session_id)) and time.monotonic() < kill_deadline:
        _signal_all(members, signal.SIGKILL)
        await asyncio.sleep(poll_s)


def rss_bytes(pids: list[int]) -> int:
    """Sum of resident set sizes (shared pages counted once per process, so an upper bound)."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int((_PROC / str(pid) / "statm").read_text().split()[1]) * page
    return total


def pss_bytes(pids: list[int]) -> int:
    """Sum of proportional set sizes: shared pages split between their users (the honest memory figure)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for line in (_PROC / str(pid) / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
    return total


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
