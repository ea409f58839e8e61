"""The processes of a local raypilot installation: Temporal dev server, sandbox, worker, controller.

Used by `raypilot demo`; each process logs to a file in the demo directory and is stopped by PID.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from raypilot.testing.binaries import temporal_cli
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES

TEMPORAL_PORT = 7233
UI_PORT = 8233
STOP_PATIENCE_SECONDS = 20.0
# The worker's graceful shutdown waits up to 30 s for running activities, and a RayService workflow always has
# a heartbeating wait running: nothing is lost by cutting that short, the workflows are durable.
WORKER_STOP_PATIENCE_SECONDS = 3.0
WORKER_START_PATIENCE_SECONDS = 120.0
WORKER_READY_LINE = "worker started:"
CONTROLLER_READY_TEXT = "connected to Temporal at"  # logged by the leading controller (raypilot.controller)
REMOTE_TEMPORAL_SETTINGS = (
    "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA",
)  # fmt: skip


class StackError(RuntimeError):
    pass


def port_is_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def wait_for_port(host: str, port: int, patience: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + patience
    while not port_is_open(host, port):
        if time.monotonic() > deadline:
            raise StackError(f"{what} did not open {host}:{port} within {patience:.0f} s; see {log}")
        time.sleep(0.2)


@dataclass
class LocalStack:
    workdir: Path
    ray_mode: str = "real"
    temporal_port: int = TEMPORAL_PORT
    ui_port: int = UI_PORT
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    kubeconfig: Path | None = None
    # The worker and the controller run as their ServiceAccounts (deploy/'s RBAC).
    worker_kubeconfig: Path | None = None
    controller_kubeconfig: Path | None = None
    logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    @property
    def web_ui(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Path:
        log_path = self.workdir / f"{name}.log"
        log = log_path.open("wb")  # each run starts with fresh logs, as with a fresh database
        self.logs.append(log)
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=self.workdir
        )
        self.processes.append((name, process))
        return log_path

    def _spawn_until_logged(self, name: str, argv: list[str], env: dict[str, str], ready_text: str) -> None:
        """Spawns `name` and waits until its log says `ready_text`; StackError when it exits first or takes
        longer than WORKER_START_PATIENCE_SECONDS."""
        log = self._spawn(name, argv, env)
        process = self.processes[-1][1]
        deadline = time.monotonic() + WORKER_START_PATIENCE_SECONDS
        while ready_text not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise StackError(f"the {name} did not start; see {log}")
            time.sleep(0.2)

    def _local_env(self, kubeconfig: Path) -> dict[str, str]:
        """The environment of a process that talks to the local dev server, and to Kubernetes as
        `kubeconfig`."""
        # The local dev server wants none of the credentials a shell may hold for another Temporal.
        inherited = {key: value for key, value in os.environ.items() if key not in REMOTE_TEMPORAL_SETTINGS}
        return {**inherited, "TEMPORAL_ADDRESS": self.temporal_address, "KUBECONFIG": str(kubeconfig)}

    def start_temporal(self) -> None:
        """A dev server with an empty database: workflows of an earlier demo would otherwise resume against a
        sandbox that no longer holds their objects."""
        for port in (self.temporal_port, self.ui_port):
            if port_is_open("127.0.0.1", port):
                raise StackError(
                    f"something already listens on 127.0.0.1:{port}; stop it (or the earlier demo) first,"
                    " or choose other ports (raypilot demo --temporal-port P --ui-port Q)"
                )
        database = self.workdir / "temporal.db"
        database.unlink(missing_ok=True)
        attributes = [
            arg for key in ALL_SEARCH_ATTRIBUTES for arg in ("--search-attribute", f"{key.name}=Keyword")
        ]
        log = self._spawn(
            "temporal",
            [
                temporal_cli(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.temporal_port),
                "--ui-port", str(self.ui_port), "--db-filename", str(database),
                "--log-level", "warn", *attributes,
            ],
        )  # fmt: skip
        wait_for_port("127.0.0.1", self.temporal_port, 60, "the Temporal dev server", log)

    def start_sandbox(self) -> Path:
        """`raypilot sandbox up`: the real stack (built by `make kube`; root), its pods' Ray `ray_mode`. When
        this machine cannot run it, StackError says why and what to do."""
        sandbox_dir = self.workdir / "sandbox"
        result = subprocess.run(
            [sys.executable, "-m", "raypilot.cli.main", "sandbox", "up", "--ray", self.ray_mode,
             "--dir", str(sandbox_dir)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise StackError(f"raypilot sandbox up failed:\n{(result.stderr or result.stdout).strip()}")
        state = json.loads((sandbox_dir / "state.json").read_text())
        for line in result.stdout.splitlines():
            if line.startswith("KUBECONFIG="):
                self.kubeconfig = Path(line.removeprefix("KUBECONFIG="))
                self.worker_kubeconfig = Path(state["workerKubeconfig"])
                self.controller_kubeconfig = Path(state["controllerKubeconfig"])
                return self.kubeconfig
        raise StackError(f"raypilot sandbox up printed no KUBECONFIG line:\n{result.stdout}")

    def start_worker(self) -> None:
        if self.worker_kubeconfig is None:
            raise StackError("start the sandbox before the worker")
        env = self._local_env(self.worker_kubeconfig)
        env["RAYPILOT_DASHBOARD_ACCESS"] = "proxy"  # pods' names do not resolve on this machine
        # Failed RayJobs' driver logs outlive their clusters here (docs/logs.md), unless the shell says where.
        env.setdefault("RAYPILOT_LOG_STORE", str((self.workdir / "driver-logs").resolve()))
        repo_worker = Path(__file__).resolve().parents[2] / "worker.py"
        argv = [sys.executable, str(repo_worker)] if repo_worker.is_file() else ["raypilot", "worker"]
        # Ready once it polls: the line worker.py logs inside its running Worker (imports take seconds).
        self._spawn_until_logged("worker", argv, env, WORKER_READY_LINE)

    def start_controller(self) -> None:
        """`raypilot controller` beside the worker (the raypilot.io CRDs installed first); ready once it leads
        and reached Temporal."""
        if self.controller_kubeconfig is None:
            raise StackError("start the sandbox before the controller")
        argv = [sys.executable, "-m", "raypilot.cli.main", "controller", "--status-interval", "0.5"]
        env = self._local_env(self.controller_kubeconfig)
        self._spawn_until_logged("controller", argv, env, CONTROLLER_READY_TEXT)

    def stop(self) -> None:
        """Stops the worker, the sandbox and the dev server, newest first."""
        for name, process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(WORKER_STOP_PATIENCE_SECONDS if name == "worker" else STOP_PATIENCE_SECONDS)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self.processes.clear()
        if self.kubeconfig is not None:
            down = ["sandbox", "down", "--dir", str(self.workdir / "sandbox")]
            subprocess.run(
                [sys.executable, "-m", "raypilot.cli.main", *down], capture_output=True, check=False
            )
            self.kubeconfig = self.worker_kubeconfig = self.controller_kubeconfig = None
        for log in self.logs:
            log.close()
        self.logs.clear()
