"""A sandbox's state directory (DIR of `raypilot sandbox`): its lock, held by the sandbox process for as long
as it lives (the lock, not a PID file, says whether DIR is in use), and its JSON files, replaced whole."""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

KUBECONFIG_FILE = "kubeconfig"  # the admin's
LOCK_FILE = "sandbox.lock"
STATE_FILE = "state.json"


@contextlib.contextmanager
def held_lock(workdir: Path) -> Iterator[IO[str] | None]:
    """Take DIR's lock without waiting; yields None when another process holds it."""
    workdir.mkdir(parents=True, exist_ok=True)
    handle = (workdir / LOCK_FILE).open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield handle
    finally:
        handle.close()


def in_use(workdir: Path) -> bool:
    if not (workdir / LOCK_FILE).exists():
        return False
    with held_lock(workdir) as lock:
        return lock is None


def read_state(workdir: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((workdir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(data, indent=2))
    partial.replace(path)


def kubeconfig_line(workdir: Path) -> str:
    return f"KUBECONFIG={workdir / KUBECONFIG_FILE}"


def wait_released(workdir: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while in_use(workdir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
