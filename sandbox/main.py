"""`raypilot sandbox up|down`: run the local cluster in the background (or in the foreground) per directory.

    raypilot sandbox up [--kube real] [--ray real|simulated] [--dir DIR] [--foreground]
    raypilot sandbox down [--dir DIR]

`up` runs the real stack (sandbox/realkube: etcd, kube-apiserver, kube-controller-manager, KubeRay's operator,
raypilot's node agent running pods as local processes, the sandbox's Gateway controller reading Gateways and
HTTPRoutes from the API server) built by `make kube`, with deploy/'s CRDs and RBAC installed; it needs root.
The pods' Ray is real Ray, or with `--ray simulated` simulated Ray (sandbox/images/simulated_ray.py: a
RayCluster costs a few small processes). Without `--kube`, `up` never starts a cold build: when the binaries
are not built it fails saying so; `--kube real` builds them first, showing the build's progress. When this
machine cannot run the stack (not root, no `ip` or `nft`) `up` fails with the reason.

DIR (default ~/.raypilot/sandbox) holds what `up` leaves behind: `kubeconfig` (an admin's),
`worker.kubeconfig` and `controller.kubeconfig` (the worker's and `raypilot controller`'s ServiceAccounts,
bound to deploy/'s and deploy/controller's ClusterRoles), `sandbox.log`, `state.json` (pid, API URL, ...)
once ready, and `sandbox.lock`, held for as long as the sandbox process lives: that lock, not a PID file, says
whether DIR is in use.

Exit status: 0 success, 2 bad input, 1 failure. `up` prints `KUBECONFIG=<path>` as a line of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sandbox.ray.processes import process_alive, stat_fields, stop_session
from sandbox.realkube.controlplane import KUBE_DIR_ENV, ControlPlaneError, kube_dir
from sandbox.realkube.node import RayKind
from sandbox.realkube.stack import real_stack, real_stack_unavailable
from sandbox.statedir import (
    KUBECONFIG_FILE,
    LOCK_FILE,
    STATE_FILE,
    held_lock,
    in_use,
    kubeconfig_line,
    read_state,
    wait_released,
    write_json,
)

DEFAULT_DIR = Path("~/.raypilot/sandbox")
LOG_FILE = "sandbox.log"
# The real stack starts six servers and installs deploy/, and its node agent stops every pod on the way out.
UP_TIMEOUT_S = 300.0
DOWN_TIMEOUT_S = 180.0
KUBE_MODES = ("real",)
RAY_MODES = ("real", "simulated")
WORKER_KUBECONFIG_FILE = "worker.kubeconfig"
CONTROLLER_KUBECONFIG_FILE = "controller.kubeconfig"
_LOG_TAIL_CHARS = 3000


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="raypilot sandbox",
        description=(
            "The real Kubernetes stack built by `make kube` (kube-apiserver, etcd, kube-controller-manager, "
            "KubeRay's operator) with raypilot's node agent running pods as local processes, on this machine."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    up = commands.add_parser("up", help="start the sandbox (in the background unless --foreground)")
    up.add_argument(
        "--kube", choices=KUBE_MODES, help="real: build the binaries first if `make kube` has not"
    )
    up.add_argument("--ray", choices=RAY_MODES, default="real", help="what the pods' Ray is (default: real)")
    up.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default %(default)s)")
    up.add_argument("--foreground", action="store_true", help="stay attached until Ctrl-C or SIGTERM")
    up.add_argument("--timeout", type=float, help=argparse.SUPPRESS)
    down = commands.add_parser("down", help="stop everything `up` started in DIR")
    down.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default %(default)s)")
    down.add_argument("--timeout", type=float, help=argparse.SUPPRESS)
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
            return _up_command(workdir, args)
        if args.command == "down":
            return _down(workdir, args.timeout)
        return _serve_real(workdir, args.ray)
    except OSError as exc:
        print(f"raypilot sandbox {args.command}: {exc}", file=sys.stderr)
        return 1


# ---- up ----------------------------------------------------------------------------------------------------


def unavailable_reason(build: bool) -> str | None:
    """Why `up` cannot run the real stack here, with what to do (None when it can). With `build`, a cold
    cache is built first (showing its progress), else it is a reason."""
    reason = real_stack_unavailable()
    if reason is not None:
        return f"{reason}: run it as root on a machine with iproute2 and nftables"
    try:  # found (or built) here, before the sandbox process starts, so that a cold build shows its progress
        os.environ[KUBE_DIR_ENV] = str(kube_dir(show_progress=build, build=build))
    except ControlPlaneError as exc:
        if build:
            return str(exc)
        return f"{exc} (or `raypilot sandbox up --kube real` builds it first, showing its progress)"
    return None


def _up_command(workdir: Path, args: argparse.Namespace) -> int:
    timeout_s = args.timeout if args.timeout is not None else UP_TIMEOUT_S
    if timeout_s <= 0:
        print("raypilot sandbox up: --timeout must be positive", file=sys.stderr)
        return 2
    if not in_use(workdir):
        reason = unavailable_reason(build=args.kube == "real")
        if reason is not None:
            print(f"raypilot sandbox up: {reason}", file=sys.stderr)
            return 1
    if args.foreground:
        with held_lock(workdir) as lock:
            if lock is None:
                return _report_running(workdir)
            return _serve_real(workdir, args.ray, announce=True)
    return _up(workdir, args.ray, timeout_s)


def _report_running(workdir: Path) -> int:
    running = read_state(workdir) or {}
    print(
        f"a sandbox is already running in {workdir} (pid {running.get('pid', '?')}, "
        f"{running.get('kube', '?')} Kubernetes, {running.get('rayMode', '?')} Ray); "
        f"`raypilot sandbox down --dir {workdir}` stops it",
        file=sys.stderr,
    )
    print(kubeconfig_line(workdir), flush=True)
    return 0


def _up(workdir: Path, ray_mode: RayKind, timeout_s: float) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    if in_use(workdir):
        return _report_running(workdir)
    (workdir / STATE_FILE).unlink(missing_ok=True)
    log_path = workdir / LOG_FILE
    serve = ["_serve", "--ray", ray_mode, "--dir", str(workdir)]
    with log_path.open("ab") as log_file:
        child = subprocess.Popen(
            [sys.executable, "-m", "sandbox.main", *serve],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = read_state(workdir)
        if state is not None and state.get("pid") == child.pid:
            print(
                f"sandbox running in {workdir} (pid {child.pid}, real Kubernetes, {ray_mode} Ray, "
                f"API {state.get('apiUrl')})",
                file=sys.stderr,
            )
            if "workerKubeconfig" in state:
                print(
                    f"the worker's kubeconfig (deploy/'s RBAC): {state['workerKubeconfig']}; "
                    f"`raypilot controller`'s (deploy/controller's): {state['controllerKubeconfig']}",
                    file=sys.stderr,
                )
            print(kubeconfig_line(workdir), flush=True)
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


def _serve_real(workdir: Path, ray_mode: RayKind, *, announce: bool = False) -> int:
    """The real stack until SIGINT or SIGTERM (the caller holds DIR's lock, or takes it here)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with contextlib.ExitStack() as held:
        if not announce and held.enter_context(held_lock(workdir)) is None:
            print(f"a sandbox is already running in {workdir}", file=sys.stderr)
            return 1
        try:
            stack = held.enter_context(real_stack(workdir, ray_mode))
        except ControlPlaneError as exc:
            print(f"the real stack failed to start: {exc}", file=sys.stderr)
            return 1
        for source, name in (
            (stack.plane.kubeconfig, KUBECONFIG_FILE),
            (stack.installed.worker, WORKER_KUBECONFIG_FILE),
            (stack.installed.controller, CONTROLLER_KUBECONFIG_FILE),
        ):
            shutil.copyfile(source, workdir / name)
            (workdir / name).chmod(0o600)
        info = stack.info(os.getpid())
        info.update(
            kubeconfig=str(workdir / KUBECONFIG_FILE),
            workerKubeconfig=str(workdir / WORKER_KUBECONFIG_FILE),
            controllerKubeconfig=str(workdir / CONTROLLER_KUBECONFIG_FILE),
        )
        write_json(workdir / STATE_FILE, info)
        if announce:
            print(
                f"real stack running ({ray_mode} Ray, API {stack.plane.server}); Ctrl-C stops it",
                file=sys.stderr,
            )
            print(kubeconfig_line(workdir), flush=True)
        try:
            stop.wait()
        finally:
            (workdir / STATE_FILE).unlink(missing_ok=True)
    return 0


# ---- down --------------------------------------------------------------------------------------------------


def _down(workdir: Path, timeout_s: float | None) -> int:
    if not workdir.is_dir():
        print(f"no sandbox in {workdir}", file=sys.stderr)
        return 0
    if in_use(workdir):
        state = read_state(workdir)
        pid = state.get("pid") if state else None
        if timeout_s is None:
            timeout_s = DOWN_TIMEOUT_S
        if not isinstance(pid, int):
            print(
                f"a sandbox holds {workdir / LOCK_FILE} but its state file is missing; is it still starting?",
                file=sys.stderr,
            )
            return 1
        if not _terminate(pid, timeout_s) or not wait_released(workdir, 5.0):
            print(f"the sandbox process {pid} did not stop", file=sys.stderr)
            return 1
        print(f"sandbox in {workdir} stopped (pid {pid})", file=sys.stderr)
    else:
        print(f"no sandbox running in {workdir}", file=sys.stderr)
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
    if not process_alive(pid):
        return False
    try:  # a zombie child of ours counts as gone
        return stat_fields(pid)[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(sandbox_command(sys.argv[1:]))
