"""Ray heads for the sandbox's RayCluster controller: real local `ray start --head` processes, or a
simulated dashboard, behind one surface (`RayHead`)."""

from __future__ import annotations

from typing import Protocol

from sandbox.ray.real import RayHeadStartError, RealRayHead, remove_orphaned_temp_dir
from sandbox.ray.simulated import SimulatedDashboard
from sandbox.ray.simulated_timings import SimulationTimings


class RayHead(Protocol):
    """What the RayCluster controller needs from a head, real or simulated.

    `ports` maps KubeRay's head Service port names ("dashboard", "serve"; a real head also "client",
    "gcs-server", "metrics") to local ports on `host`; `auth_headers` carries the bearer token when the
    head env turned token auth on.
    """

    name: str
    host: str

    @property
    def ports(self) -> dict[str, int]: ...

    @property
    def pids(self) -> list[int]: ...

    @property
    def dashboard_url(self) -> str: ...

    @property
    def auth_headers(self) -> dict[str, str]: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def restart(self) -> None: ...


__all__ = [
    "RayHead",
    "RayHeadStartError",
    "RealRayHead",
    "SimulatedDashboard",
    "SimulationTimings",
    "remove_orphaned_temp_dir",
]
