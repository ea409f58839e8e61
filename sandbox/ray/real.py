"""A real local Ray head (`ray start --head --block`) with its own temp dir and ports, stopped by PID.

Several heads run side by side (an upgrade has two clusters; other people run theirs), so each head gets:
- its own short temp dir under the system temp dir (`rp-XXXXXXXX`; Ray's unix socket paths must stay under
  ~107 characters), linked from `<workdir>/ray-temp` for inspection;
- a node IP on the loopback network other than 127.0.0.1 (Ray replaces 127.0.0.1 by the machine's outward
  address, which would send traffic off loopback); the sandbox may pass the pod IP;
- distinct reserved ports for every listener, including the two metric servers Ray otherwise fixes;
- the Serve proxy on a reserved port, enforced by the dashboard front (see `sandbox.ray.real_front`).
It is stopped by signalling the PIDs of its session (never `ray stop`, which kills everyone's Ray).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import aiohttp

from sandbox.ray.head_access import HeadAccess
from sandbox.ray.ports import claim_ports, release_ports, reserve_port_block, reserve_ports
from sandbox.ray.processes import session_members, stop_session
from sandbox.ray.real_front import DashboardFront
from sandbox.ray.real_params import auth_token, ray_process_env, translate_ray_start_params

DEFAULT_NODE_IP = "127.0.0.2"
WORKER_PORT_COUNT = 100
LOG_TAIL_CHARS = 4000
_PORT_NAMES = (
    "dashboard",
    "serve",
    "client",
    "gcs-server",
    "metrics",
    "dashboard-upstream",
    "dashboard-agent-listen",
    "dashboard-agent-grpc",
    "node-manager",
    "object-manager",
    "runtime-env-agent",
    "serve-grpc",
    "dashboard-metrics",
    "autoscaler-metrics",
)


def remove_orphaned_temp_dir(workdir: Path) -> None:
    """Remove the temp dir a head left behind when its sandbox died without stopping it (e.g. kill -9):
    `<workdir>/ray-temp` still links to it. Stop the head's processes first (by PID, see `processes`)."""
    link = Path(workdir) / "ray-temp"
    if not link.is_symlink():
        return
    target = Path(os.readlink(link))
    if target.name.startswith("rp-"):
        shutil.rmtree(target, ignore_errors=True)
    link.unlink()


class RayHeadStartError(RuntimeError):
    """The head did not answer on its dashboard in time; the message ends with the tail of its log."""


def ray_executable() -> Path:
    """The `ray` script of the running interpreter's environment."""
    return Path(sys.executable).parent / "ray"


class RealRayHead(HeadAccess):
    """One `ray start --head` process tree.

    `ports` maps "dashboard", "serve", "client", "gcs-server" and "metrics" (the names of KubeRay's head
    Service ports) to the local ports on `host` where they answer; "dashboard" is the front that pins Serve's
    address. Ports are reserved at construction and kept across `restart`.
    """

    def __init__(
        self,
        name: str,
        workdir: Path,
        env: Mapping[str, str],
        ray_start_params: Mapping[str, str],
        *,
        node_ip: str = DEFAULT_NODE_IP,
        start_timeout_s: float = 120.0,
        stop_grace_s: float = 1.0,
    ) -> None:
        self.name = name
        self.workdir = Path(workdir)
        self.host = node_ip
        self._env = dict(env)
        self._token = auth_token(self._env)
        self._params = translate_ray_start_params(ray_start_params)
        self._start_timeout_s = start_timeout_s
        self._stop_grace_s = stop_grace_s
        self._all_ports = dict(zip(_PORT_NAMES, reserve_ports(len(_PORT_NAMES)), strict=True))
        self._worker_ports = reserve_port_block(WORKER_PORT_COUNT)
        self._process: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None
        self._front: DashboardFront | None = None
        self._temp_dir: Path | None = None
        self.start_seconds: float | None = None

    @property
    def ports(self) -> dict[str, int]:
        return {
            key: self._all_ports[key] for key in ("dashboard", "serve", "client", "gcs-server", "metrics")
        }

    @property
    def ignored_params(self) -> tuple[str, ...]:
        """rayStartParams keys not passed to Ray because the sandbox owns them (or does not know them)."""
        return self._params.ignored

    @property
    def log_path(self) -> Path:
        return self.workdir / "ray-start.log"

    @property
    def temp_dir(self) -> Path | None:
        return self._temp_dir

    @property
    def pids(self) -> list[int]:
        """Live PIDs of this head's processes (Ray workers included)."""
        return session_members(self._process.pid) if self._process is not None else []

    def command(self, temp_dir: Path) -> list[str]:
        ports = self._all_ports
        return [
            str(ray_executable()),
            "start",
            "--head",
            "--block",
            f"--temp-dir={temp_dir}",
            f"--node-ip-address={self.host}",
            f"--port={ports['gcs-server']}",
            "--include-dashboard=true",
            f"--dashboard-host={self.host}",
            f"--dashboard-port={ports['dashboard-upstream']}",
            f"--ray-client-server-port={ports['client']}",
            f"--dashboard-agent-listen-port={ports['dashboard-agent-listen']}",
            f"--dashboard-agent-grpc-port={ports['dashboard-agent-grpc']}",
            f"--node-manager-port={ports['node-manager']}",
            f"--object-manager-port={ports['object-manager']}",
            f"--runtime-env-agent-port={ports['runtime-env-agent']}",
            f"--metrics-export-port={ports['metrics']}",
            f"--min-worker-port={self._worker_ports.start}",
            f"--max-worker-port={self._worker_ports.stop - 1}",
            "--disable-usage-stats",
            *self._params.flags,
        ]

    async def start(self) -> None:
        """Start the head and return once its dashboard answers `GET /api/version` (through the front)."""
        if self._process is not None:
            raise RuntimeError(f"Ray head {self.name} is already running")
        began = time.monotonic()
        claim_ports([*self._all_ports.values(), *self._worker_ports])
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._temp_dir = Path(tempfile.mkdtemp(prefix="rp-", dir=tempfile.gettempdir()))
        remove_orphaned_temp_dir(self.workdir)
        (self.workdir / "ray-temp").symlink_to(self._temp_dir)
        env = ray_process_env(
            os.environ,
            self._env,
            gcs_address=f"{self.host}:{self._all_ports['gcs-server']}",
            dashboard_metric_port=self._all_ports["dashboard-metrics"],
            autoscaler_metric_port=self._all_ports["autoscaler-metrics"],
        )
        self._log = self.log_path.open("ab")
        self._process = await asyncio.create_subprocess_exec(
            *self.command(self._temp_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=self._log,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            cwd=self.workdir,
            start_new_session=True,
        )
        self._front = DashboardFront(
            listen_host=self.host,
            listen_port=self._all_ports["dashboard"],
            upstream=f"http://{self.host}:{self._all_ports['dashboard-upstream']}",
            serve_http_port=self._all_ports["serve"],
            serve_grpc_port=self._all_ports["serve-grpc"],
        )
        try:
            await self._front.start()
            await self._wait_until_ready()
        except BaseException:
            await self._stop_processes()
            raise
        self.start_seconds = time.monotonic() - began

    async def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self._start_timeout_s
        url = f"{self.dashboard_url}/api/version"
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout, headers=self.auth_headers) as session:
            while True:
                assert self._process is not None
                exit_code = self._process.returncode
                if exit_code is not None:
                    raise RayHeadStartError(
                        f"ray start for {self.name} exited with {exit_code}:\n{self.log_tail()}"
                    )
                try:
                    async with session.get(url) as response:
                        if response.status == 200:
                            return
                except (TimeoutError, aiohttp.ClientError):
                    pass
                if time.monotonic() > deadline:
                    limit = f"{self._start_timeout_s:.0f} s"
                    raise RayHeadStartError(
                        f"Ray head {self.name} did not answer on {url} within {limit}:\n{self.log_tail()}"
                    )
                await asyncio.sleep(0.25)

    def log_tail(self) -> str:
        """The end of `ray start`'s output and of the dashboard's log, for error messages."""
        parts: list[str] = []
        candidates = [self.log_path]
        if self._temp_dir is not None:
            candidates.append(self._temp_dir / "session_latest" / "logs" / "dashboard.log")
        for path in candidates:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            parts.append(f"--- {path.name} ---\n{text[-LOG_TAIL_CHARS:]}")
        return "\n".join(parts)

    async def _stop_processes(self) -> None:
        if self._front is not None:
            await self._front.stop()
            self._front = None
        if self._process is not None:
            await stop_session(self._process.pid, grace_s=self._stop_grace_s)
            await self._process.wait()
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            link = self.workdir / "ray-temp"
            if link.is_symlink():
                link.unlink()
            self._temp_dir = None

    async def stop(self) -> None:
        """Stop every process of the head by PID, remove its temp dir and give its ports back."""
        await self._stop_processes()
        release_ports([*self._all_ports.values(), *self._worker_ports])

    async def restart(self) -> None:
        """Stop and start again on the same ports (a head crash for fault injection): jobs and Serve apps
        are gone afterwards, as on a real head without GCS fault tolerance."""
        await self._stop_processes()
        await self.start()
