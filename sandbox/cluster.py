"""The whole local cluster in one asyncio process: Store, Kubernetes API, address pools and controllers.

    sandbox = Sandbox(workdir, ray_mode="simulated")
    await sandbox.start()        # API on 127.0.0.1, kubeconfig at sandbox.kubeconfig_path
    ...
    await sandbox.stop()         # every Ray head and Job process stopped by PID

Fault hooks for tests: `stop_dashboard` / `start_dashboard`, also over HTTP for other processes on a small
control port (its URL in DIR/control.json): `POST <control>/sandbox/dashboards/<ns>/<cluster>/stop|start`;
and the API fault injector `sandbox.faults` (at /sandbox/faults on the API port).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

from sandbox.apiserver import ApiServer
from sandbox.controllers.endpoints import EndpointSliceController
from sandbox.controllers.gateway import GatewayController
from sandbox.controllers.job import JobController
from sandbox.controllers.raycluster import RayClusterController
from sandbox.controllers.raycluster_head import HeadFactory, RayHead
from sandbox.controllers.raycluster_sidecars import HeadSidecarController
from sandbox.controllers.service import ServiceController
from sandbox.faults import FaultInjector
from sandbox.kubeconfig import write_kubeconfig
from sandbox.store import Store

log = logging.getLogger(__name__)

RayMode = Literal["real", "simulated"]
RAY_MODES: tuple[RayMode, ...] = ("real", "simulated")
KUBECONFIG_FILE = "kubeconfig"
SESSIONS_FILE = "sessions.json"
CONTROL_FILE = "control.json"


def session_of(pid: int) -> int | None:
    """The session id of a live process (field 6 of /proc/<pid>/stat), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[3]) if len(fields) >= 4 else None


class Sandbox:
    def __init__(
        self,
        workdir: Path,
        ray_mode: RayMode = "simulated",
        *,
        api_port: int = 0,
        head_factory: HeadFactory | None = None,
        simulated_options: Mapping[str, Any] | None = None,
        job_backoff_base_s: float = 1.0,
        job_backoff_cap_s: float = 10.0,
    ) -> None:
        if ray_mode not in RAY_MODES:
            raise ValueError(f"ray_mode must be one of {RAY_MODES}, got {ray_mode!r}")
        self.workdir = Path(workdir).resolve()
        self.ray_mode: RayMode = ray_mode
        self.api_port = api_port
        self.store = Store()
        self.faults = FaultInjector()
        self.api = ApiServer(self.store, port=api_port, faults=self.faults)
        self.api_url = ""
        self.kubeconfig_path = self.workdir / KUBECONFIG_FILE
        self._simulated_options = dict(simulated_options or {})
        self.services = ServiceController(self.store)
        self.endpoints = EndpointSliceController(self.store)
        self.gateways = GatewayController(
            self.store, self.store.pools.gateways, service_address=self.services.listen_address
        )
        self.rayclusters = RayClusterController(
            self.store,
            head_factory or self._default_head_factory(),
            on_processes_changed=self._record_sessions,
        )
        self.jobs = JobController(
            self.store,
            self.workdir,
            backoff_base_s=job_backoff_base_s,
            backoff_cap_s=job_backoff_cap_s,
            extra_env={"KUBECONFIG": str(self.kubeconfig_path)},
            on_processes_changed=self._record_sessions,
        )
        self.head_sidecars = HeadSidecarController(
            self.store,
            self.workdir,
            extra_env={"KUBECONFIG": str(self.kubeconfig_path)},
            on_processes_changed=self._record_sessions,
        )
        self.control_url = ""
        self._control: web.AppRunner | None = None
        self._started = False

    def _default_head_factory(self) -> HeadFactory:
        if self.ray_mode == "real":
            from sandbox.ray.real import RealRayHead

            def real(name: str, env: Mapping[str, str], params: Mapping[str, str], pod_ip: str) -> RayHead:
                # As in a Ray image, `python` and `ray` (e.g. in a job's entrypoint) must be Ray's own.
                path = os.pathsep.join(
                    [str(Path(sys.executable).parent), env.get("PATH", os.environ.get("PATH", ""))]
                )
                return RealRayHead(
                    name, self.workdir / "ray" / name, {**env, "PATH": path}, params, node_ip=pod_ip
                )

            return real

        from sandbox.ray.simulated import SimulatedDashboard

        def simulated(name: str, env: Mapping[str, str], params: Mapping[str, str], pod_ip: str) -> RayHead:
            return SimulatedDashboard(name, env, params, host=pod_ip, **self._simulated_options)

        return simulated

    @property
    def controllers(self) -> list[Any]:
        return [self.services, self.endpoints, self.gateways, self.rayclusters, self.head_sidecars, self.jobs]

    async def start(self) -> None:
        """Serve the API, write the kubeconfig, start every controller; returns when all are running."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.api_url = await self.api.start()
        write_kubeconfig(self.kubeconfig_path, self.api_url)
        try:
            for controller in self.controllers:
                await controller.start()
            await self._start_control()
        except BaseException:
            await self.stop()
            raise
        self._started = True
        log.info(
            "sandbox (%s Ray) ready: %s, KUBECONFIG=%s", self.ray_mode, self.api_url, self.kubeconfig_path
        )

    async def stop(self) -> None:
        """Stop the controllers (Ray heads and Job processes by PID), the proxies and the API."""
        if self._control is not None:
            await self._control.cleanup()
            self._control = None
        with contextlib.suppress(OSError):
            (self.workdir / CONTROL_FILE).unlink()
        for controller in reversed(self.controllers):
            try:
                await controller.stop()
            except Exception:
                log.exception("stopping %s failed", type(controller).__name__)
        await self.api.stop()
        self.store.close()
        self._started = False
        self._record_sessions()

    # ---- fault hooks -----------------------------------------------------------------------------------
    async def stop_dashboard(self, namespace: str, cluster: str) -> None:
        """The head's Ray container of RayCluster `namespace/cluster` crashes (see RayClusterController)."""
        await self.rayclusters.stop_dashboard(namespace, cluster)

    async def start_dashboard(self, namespace: str, cluster: str) -> None:
        """The kubelet restarts that Ray container in place."""
        await self.rayclusters.start_dashboard(namespace, cluster)

    async def _start_control(self) -> None:
        app = web.Application()
        app.router.add_post("/sandbox/dashboards/{namespace}/{cluster}/{action}", self._dashboard_endpoint)
        app.router.add_get("/sandbox/info", self._info_endpoint)
        self._control = web.AppRunner(app, access_log=None)
        await self._control.setup()
        await web.TCPSite(self._control, "127.0.0.1", 0).start()
        self.control_url = f"http://127.0.0.1:{self._control.addresses[0][1]}"
        path = self.workdir / CONTROL_FILE
        path.write_text(json.dumps({"url": self.control_url}))

    async def _dashboard_endpoint(self, request: web.Request) -> web.Response:
        namespace, cluster, action = (request.match_info[k] for k in ("namespace", "cluster", "action"))
        hooks = {"stop": self.stop_dashboard, "start": self.start_dashboard}
        if action not in hooks:
            return web.json_response({"error": f"unknown action {action!r}; use stop or start"}, status=404)
        try:
            await hooks[action](namespace, cluster)
        except LookupError as exc:
            return web.json_response({"error": str(exc)}, status=404)
        return web.json_response({"namespace": namespace, "cluster": cluster, "action": action})

    async def _info_endpoint(self, _: web.Request) -> web.Response:
        return web.json_response(self.info())

    def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "rayMode": self.ray_mode,
            "apiUrl": self.api_url,
            "kubeconfig": str(self.kubeconfig_path),
            "controlUrl": self.control_url,
        }

    # ---- processes -------------------------------------------------------------------------------------
    @property
    def pids(self) -> list[int]:
        """Every process the sandbox started and still runs (Ray heads with their workers, Job processes)."""
        return sorted({*self.rayclusters.pids, *self.head_sidecars.pids, *self.jobs.pids})

    def _record_sessions(self) -> None:
        """Remember the sessions of our child processes in DIR/sessions.json, so that `sandbox down` can stop
        them by PID even if this process was killed before it could."""
        sessions = sorted(
            {sid for pid in self.pids if (sid := session_of(pid)) is not None and sid != os.getsid(0)}
        )
        path = self.workdir / SESSIONS_FILE
        with contextlib.suppress(OSError):
            partial = path.with_name(path.name + ".tmp")
            partial.write_text(json.dumps({"sessions": sessions}))
            partial.replace(path)

    async def record_sessions_periodically(self, interval_s: float = 5.0) -> None:
        """Ray starts worker processes on its own; refresh the record now and then."""
        while True:
            await asyncio.sleep(interval_s)
            self._record_sessions()
