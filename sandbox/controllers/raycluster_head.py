"""The local stand-ins for a Ray pod's processes: the Ray head (real or simulated) behind the pod IP.

A head pod's Ray listens on free local ports; TcpForwarders on podIP:containerPort (dashboard 8265, serve
8000, client 10001, gcs-server 6379, or whatever the head container declares) make the pod look like a real
one. A worker pod runs no Ray process; its Serve port forwards to the head's Serve proxy, as Serve's per-node
proxies would answer on every node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from sandbox.controllers.raycluster_pods import METRICS_PORT, runtime_port_key
from sandbox.proxy import Target, TcpForwarder

log = logging.getLogger(__name__)


class RayHead(Protocol):
    """What RealRayHead and SimulatedDashboard have in common (`ports` answer on the head's `host` attribute
    when it has one, else on 127.0.0.1)."""

    @property
    def ports(self) -> dict[str, int]: ...

    @property
    def pids(self) -> list[int]: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


# (head name, head container env, rayStartParams, pod IP) -> a RayHead not started yet
HeadFactory = Callable[[str, Mapping[str, str], Mapping[str, str], str], RayHead]


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class HeadRuntime:
    """The Ray head of one head pod and the forwarders that make podIP:containerPort reach it."""

    def __init__(
        self, pod_name: str, pod_ip: str, head: RayHead, ports: Sequence[tuple[str | None, int]]
    ) -> None:
        self.pod_name = pod_name
        self.pod_ip = pod_ip
        self.head = head
        self.running = False
        self.stopped_by_fault = False
        self.restarts = 0
        self._has_processes = False
        keys = [(runtime_port_key(name, number), number) for name, number in ports]
        if not any(key == "metrics" for key, _ in keys):
            keys.append(("metrics", METRICS_PORT))
        self._forwarders = [TcpForwarder(pod_ip, number, self._target_for(key)) for key, number in keys]

    def _target_for(self, key: str | None) -> Callable[[], Target | None]:
        def target() -> Target | None:
            if key is None or not self.running:
                return None
            port = self.head.ports.get(key)
            return None if port is None else (str(getattr(self.head, "host", "127.0.0.1")), port)

        return target

    def serve_target(self) -> Target | None:
        return self._target_for("serve")()

    @property
    def pids(self) -> list[int]:
        return list(self.head.pids) if self.running else []

    async def start(self) -> None:
        """Starts Ray (returns once its dashboard answers), then the pod-IP forwarders."""
        try:
            await self.head.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await self.head.stop()
            raise
        self.running = True
        self._has_processes = bool(self.head.pids)
        for forwarder in self._forwarders:
            await forwarder.start()

    async def stop(self) -> None:
        """Stops the forwarders and Ray (by PID; the head classes never run `ray stop`)."""
        for forwarder in self._forwarders:
            await forwarder.stop()
        self.running = False
        await self.head.stop()

    async def crash(self) -> None:
        """Fault injection: Ray goes away, the pod's addresses stay (connections are refused/closed)."""
        self.running = False
        self.stopped_by_fault = True
        await self.head.stop()

    async def recover(self) -> None:
        """The kubelet restarting the Ray container in place."""
        if not self.stopped_by_fault:  # it died on its own: clear what is left of it first
            with contextlib.suppress(Exception):
                await self.head.stop()
        await self.head.start()
        self.running = True
        self.stopped_by_fault = False
        self.restarts += 1

    @property
    def has_processes(self) -> bool:
        """Whether this head is made of local processes (a real Ray head) that can die on their own."""
        return self._has_processes

    def died_unexpectedly(self) -> bool:
        """A real Ray head whose processes all exited without being told to."""
        return self.running and self._has_processes and not any(process_alive(pid) for pid in self.head.pids)


class WorkerEndpoint:
    """A worker pod's Serve port(s), forwarding to the head's Serve proxy."""

    def __init__(self, pod_ip: str, ports: Sequence[int], serve_target: Callable[[], Target | None]) -> None:
        self.pod_ip = pod_ip
        self._forwarders = [TcpForwarder(pod_ip, port, serve_target) for port in ports]

    async def start(self) -> None:
        for forwarder in self._forwarders:
            try:
                await forwarder.start()
            except OSError as exc:  # never fatal: a worker's Serve port is a convenience
                log.warning(
                    "worker %s: cannot listen on %s:%s: %s", self.pod_ip, self.pod_ip, forwarder.port, exc
                )

    async def stop(self) -> None:
        for forwarder in self._forwarders:
            await forwarder.stop()


async def stop_all(runtimes: Sequence[HeadRuntime | WorkerEndpoint]) -> None:
    await asyncio.gather(*(runtime.stop() for runtime in runtimes), return_exceptions=True)
