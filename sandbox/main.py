"""`raypilot sandbox up|down`: run the local cluster in the background (or in the foreground) per directory.

    raypilot sandbox up [--ray real|simulated] [--dir DIR] [--foreground]
    raypilot sandbox down [--dir DIR]

DIR (default ~/.raypilot/sandbox) holds what `up` leaves behind: `kubeconfig`, `sandbox.log`, `state.json`
(pid, API URL, ...) once ready, `control.json` (the fault-hook control URL), `sessions.json` (the sessions of
its Ray heads and Job processes, so `down` can stop them by PID even after a crash) and `sandbox.lock`, held
for as long as the sandbox process lives: that lock, not a PID file, says whether DIR is in use.

Exit status: 0 success, 2 bad input, 1 failure. `up` prints `KUBECONFIG=<path>` as a line of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sandbox.cluster import KUBECONFIG_FILE, RAY_MODES, SESSIONS_FILE, RayMode, Sandbox
from sandbox.ray.processes import session_members, stop_session

DEFAULT_DIR = Path("~/.raypilot/sandbox")
LOCK_FILE = "sandbox.lock"
STATE_FILE = "state.json"
LOG_FILE = "sandbox.log"
UP_TIMEOUT_S = 120.0
DOWN_TIMEOUT_S = 60.0
_LOG_TAIL_CHARS = 3000


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="raypilot sandbox",
        description="A local Kubernetes API with Ray, Job, Service and Gateway controllers, on 127.0.0.1.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    up = commands.add_parser("up", help="start the sandbox (in the background unless --foreground)")
    up.add_argument("--ray", choices=RAY_MODES, default="real", help="real Ray heads or simulated dashboards")
    up.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default %(default)s)")
    up.add_argument("--foreground", action="store_true", help="stay attached until Ctrl-C or SIGTERM")
    up.add_argument("--timeout", type=float, default=UP_TIMEOUT_S, help=argparse.SUPPRESS)
    down = commands.add_parser("down", help="stop everything `up` started in DIR")
    down.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default %(default)s)")
    down.add_argument("--timeout", type=float, default=DOWN_TIMEOUT_S, help=argparse.SUPPRESS)
    serve = commands.add_parser("_serve", help=argparse.SUPPRESS)  # the detached process `up` starts
    serve.add_argument("--ray", choices=RAY_MODES, required=True)
    serve.add_argument("--dir", type=Path, required=True)
    return parser


def sandbox_command(argv: list[str]) -> int:
    """Entry point for `raypilot sandbox ...` (argv without the leading "sandbox")."""
    try:
        args = _parser().parse_args(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    workdir = Path(args.dir).expanduser().resolve()
    try:
        if args.command == "up":
            if args.timeout <= 0:
                print("raypilot sandbox up: --timeout must be positive", file=sys.stderr)
                return 2
            if args.foreground:
                return _run_foreground(workdir, args.ray)
            return _up(workdir, args.ray, args.timeout)
        if args.command == "down":
            return _down(workdir, args.timeout)
        return _serve(workdir, args.ray)
    except OSError as exc:
        print(f"raypilot sandbox {args.command}: {exc}", file=sys.stderr)
        return 1


# ---- the lock that says "a sandbox lives in DIR" -----------------------------------------------------------


@contextlib.contextmanager
def _held_lock(workdir: Path) -> Iterator[IO[str] | None]:
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


def _in_use(workdir: Path) -> bool:
    if not (workdir / LOCK_FILE).exists():
        return False
    with _held_lock(workdir) as lock:
        return lock is None


def _read_state(workdir: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((workdir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(data, indent=2))
    partial.replace(path)


def _kubeconfig_line(workdir: Path) -> str:
    return f"KUBECONFIG={workdir / KUBECONFIG_FILE}"


# ---- up ----------------------------------------------------------------------------------------------------


def _up(workdir: Path, ray_mode: RayMode, timeout_s: float) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    if _in_use(workdir):
        running = _read_state(workdir) or {}
        print(
            f"a sandbox is already running in {workdir} (pid {running.get('pid', '?')}, "
            f"{running.get('rayMode', '?')} Ray)",
            file=sys.stderr,
        )
        print(_kubeconfig_line(workdir), flush=True)
        return 0
    asyncio.run(_stop_leftover_sessions(workdir))
    (workdir / STATE_FILE).unlink(missing_ok=True)
    log_path = workdir / LOG_FILE
    with log_path.open("ab") as log_file:
        child = subprocess.Popen(
            [sys.executable, "-m", "sandbox.main", "_serve", "--ray", ray_mode, "--dir", str(workdir)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = _read_state(workdir)
        if state is not None and state.get("pid") == child.pid:
            print(
                f"sandbox running in {workdir} (pid {child.pid}, {ray_mode} Ray, API {state.get('apiUrl')})",
                file=sys.stderr,
            )
            print(_kubeconfig_line(workdir), flush=True)
            return 0
        if child.poll() is not None:
            print(
                f"the sandbox process exited with status {child.returncode}:\n{_log_tail(log_path)}",
                file=sys.stderr,
            )
            return 1
        time.sleep(0.1)
    print(
        f"the sandbox was not ready within {timeout_s:.0f} s; stopping it:\n{_log_tail(log_path)}",
        file=sys.stderr,
    )
    _terminate(child.pid, DOWN_TIMEOUT_S)
    return 1


def _log_tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-_LOG_TAIL_CHARS:]
    except OSError:
        return ""


def _serve(workdir: Path, ray_mode: RayMode) -> int:
    """The detached sandbox process: holds DIR's lock for its whole life."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with _held_lock(workdir) as lock:
        if lock is None:
            print(f"a sandbox is already running in {workdir}", file=sys.stderr)
            return 1
        return asyncio.run(_serve_until_signalled(workdir, ray_mode, announce=False))


def _run_foreground(workdir: Path, ray_mode: RayMode) -> int:
    with _held_lock(workdir) as lock:
        if lock is None:
            print(
                f"a sandbox is already running in {workdir}; "
                f"`raypilot sandbox down --dir {workdir}` stops it",
                file=sys.stderr,
            )
            print(_kubeconfig_line(workdir), flush=True)
            return 0
        asyncio.run(_stop_leftover_sessions(workdir))
        return asyncio.run(_serve_until_signalled(workdir, ray_mode, announce=True))


async def _serve_until_signalled(workdir: Path, ray_mode: RayMode, *, announce: bool) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    sandbox = Sandbox(workdir, ray_mode)
    try:
        await sandbox.start()
    except Exception as exc:
        logging.getLogger(__name__).exception("the sandbox failed to start")
        print(f"the sandbox failed to start: {exc}", file=sys.stderr)
        return 1
    _write_json(workdir / STATE_FILE, sandbox.info())
    if announce:
        print(f"sandbox running ({ray_mode} Ray, API {sandbox.api_url}); Ctrl-C stops it", file=sys.stderr)
        print(_kubeconfig_line(workdir), flush=True)
    recorder = asyncio.create_task(sandbox.record_sessions_periodically())
    try:
        await stop.wait()
    finally:
        recorder.cancel()
        await sandbox.stop()
        (workdir / STATE_FILE).unlink(missing_ok=True)
        (workdir / SESSIONS_FILE).unlink(missing_ok=True)
    return 0


# ---- down --------------------------------------------------------------------------------------------------


def _down(workdir: Path, timeout_s: float) -> int:
    if not workdir.is_dir():
        print(f"no sandbox in {workdir}", file=sys.stderr)
        return 0
    if _in_use(workdir):
        state = _read_state(workdir)
        pid = state.get("pid") if state else None
        if not isinstance(pid, int):
            print(
                f"a sandbox holds {workdir / LOCK_FILE} but its state file is missing; is it still starting?",
                file=sys.stderr,
            )
            return 1
        if not _terminate(pid, timeout_s) or not _wait_released(workdir, 5.0):
            print(f"the sandbox process {pid} did not stop", file=sys.stderr)
            return 1
        print(f"sandbox in {workdir} stopped (pid {pid})", file=sys.stderr)
    else:
        print(f"no sandbox running in {workdir}", file=sys.stderr)
    asyncio.run(_stop_leftover_sessions(workdir))
    (workdir / STATE_FILE).unlink(missing_ok=True)
    return 0


def _terminate(pid: int, timeout_s: float) -> bool:
    """SIGTERM (the sandbox then stops its own children by PID), SIGKILL to its session after the timeout."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    asyncio.run(stop_session(pid, grace_s=1.0))
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def _wait_released(workdir: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _in_use(workdir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def _stop_leftover_sessions(workdir: Path) -> None:
    """Stop the Ray heads and Job processes a sandbox that died without cleaning up left behind."""
    path = workdir / SESSIONS_FILE
    try:
        sessions = [int(s) for s in json.loads(path.read_text()).get("sessions", [])]
    except (OSError, ValueError, TypeError, AttributeError):
        return
    for session in sessions:
        if session_members(session):
            print(f"stopping leftover processes of session {session}", file=sys.stderr)
            await stop_session(session, grace_s=3.0)
    path.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(sandbox_command(sys.argv[1:]))
