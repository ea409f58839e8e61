"""Test helpers around the sandbox: waiting on conditions with a deadline, running a whole sandbox."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from sandbox.cluster import RayMode, Sandbox
from sandbox.netalloc import AddressPool, Pools

T = TypeVar("T")


def private_pools() -> Pools:
    """Pod, Service and Gateway addresses in a random 127.N.0.0/16, so that a test's sandbox does not collide
    with another sandbox on the same machine (the standard pools are fixed /24s). Tests patch it in for
    `sandbox.store.standard_pools`. Under pytest-xdist each worker draws from its own slice of N, so that
    two workers' sandboxes, alive at the same time, never share addresses."""
    second = private_second_octet(os.environ)
    return Pools(
        services=AddressPool(f"127.{second}.1.0/24"),
        gateways=AddressPool(f"127.{second}.2.0/24"),
        pods=AddressPool(f"127.{second}.3.0/24"),
    )


# Second octets this process has handed out: a new sandbox avoids them while others are left, so that two
# sandboxes of one test process (one torn down late, say) do not share addresses either.
_drawn_octets: set[int] = set()
_drawn_lock = threading.Lock()
_TCP_TABLE = Path("/proc/net/tcp")
_LISTEN = "0A"


def listening_loopback_octets(tcp_table: Path = _TCP_TABLE) -> set[int]:
    """N of every 127.N.x.y address a TCP socket listens on in this network namespace, whichever process
    holds it (an earlier sandbox's listener that outlived it, another test run's)."""
    try:
        lines = tcp_table.read_text().splitlines()[1:]
    except OSError:
        return set()
    octets: set[int] = set()
    for line in lines:
        fields = line.split()
        if len(fields) < 4 or fields[3] != _LISTEN:
            continue
        address = bytes.fromhex(fields[1].split(":")[0])[::-1]  # the kernel prints it little-endian
        if len(address) == 4 and address[0] == 127:
            octets.add(address[1])
    return octets


def private_second_octet(
    environ: Mapping[str, str], busy: Callable[[], set[int]] = listening_loopback_octets
) -> int:
    """N of 127.N.0.0/16: random in 100-250, or in this pytest-xdist worker's share of that range; never
    one something listens in (`busy`), and one this process has not handed out yet while there are any."""
    first, last = 100, 250
    worker, count = environ.get("PYTEST_XDIST_WORKER", ""), environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 0:
        share = (last - first + 1) // int(count)
        first += int(worker[2:]) % int(count) * share
        last = first + share - 1
    share_octets = range(first, last + 1)
    with _drawn_lock:
        in_use = busy()
        free = [n for n in share_octets if n not in in_use]
        fresh = [n for n in free if n not in _drawn_octets]
        chosen = random.choice(fresh or free or list(share_octets))
        _drawn_octets.add(chosen)
    return chosen


class ConditionTimeout(AssertionError):
    """The awaited condition did not hold before the deadline."""


async def wait_until(
    probe: Callable[[], T | Awaitable[T | None] | None],
    *,
    within: float = 10.0,
    interval: float = 0.02,
    what: str = "condition",
) -> T:
    """Poll `probe` (sync or async) until it returns something truthy and return that; fail after `within`."""
    deadline = time.monotonic() + within
    last: object = None
    while True:
        outcome = probe()
        result = await outcome if isinstance(outcome, Awaitable) else outcome
        if result:
            return result
        last = result
        if time.monotonic() >= deadline:
            raise ConditionTimeout(f"{what} not reached within {within} s (last value: {last!r})")
        await asyncio.sleep(interval)


def poll_until(
    probe: Callable[[], T | None],
    *,
    within: float = 10.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """`wait_until` for synchronous callers (tests driving the sandbox from another thread)."""
    deadline = time.monotonic() + within
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise ConditionTimeout(f"{what} not reached within {within} s (last value: {result!r})")
        time.sleep(interval)


@contextlib.asynccontextmanager
async def running_sandbox(
    workdir: Path, ray: RayMode = "simulated", **options: Any
) -> AsyncIterator[Sandbox]:
    """A started Sandbox on the current event loop, stopped (every process by PID) on exit.

    The sandbox serves HTTP from this loop: blocking clients (the official `kubernetes` client, `kubectl`
    run synchronously) must run in another thread, e.g. `await asyncio.to_thread(...)`, or use
    `SandboxThread` instead. `options` go to `Sandbox` (e.g. simulated_options, job_backoff_base_s).
    """
    sandbox = Sandbox(workdir, ray, **options)
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.stop()


class SandboxThread:
    """A Sandbox on its own event loop in a background thread, for tests that use blocking clients.

    with SandboxThread(tmp_path, "simulated") as cluster:
        api = kubernetes.client.CoreV1Api(cluster.api_client())
        cluster.call(lambda: cluster.sandbox.stop_dashboard("default", "rc"))
    """

    def __init__(self, workdir: Path, ray: RayMode = "simulated", **options: Any) -> None:
        self._workdir, self._ray, self._options = workdir, ray, options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sandbox", daemon=True)
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            raise RuntimeError("the sandbox is not running")
        return self._sandbox

    @property
    def kubeconfig_path(self) -> Path:
        return self.sandbox.kubeconfig_path

    def call(self, make: Callable[[], Awaitable[T]], timeout: float = 120.0) -> T:
        """Run a coroutine on the sandbox's loop and wait for its result."""

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` configured from the sandbox's kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig_path))

    def __enter__(self) -> SandboxThread:
        self._thread.start()

        async def start() -> Sandbox:
            sandbox = Sandbox(self._workdir, self._ray, **self._options)
            await sandbox.start()
            return sandbox

        self._sandbox = self.call(start)
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self._sandbox is not None:
                self.call(self._sandbox.stop)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()


HEAD_PORTS = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("serve", 8000))


def raycluster_manifest(
    name: str,
    namespace: str = "default",
    *,
    workers: int = 1,
    env: dict[str, str] | None = None,
    head_labels: dict[str, str] | None = None,
    num_cpus: int = 2,
) -> dict[str, Any]:
    """A small KubeRay RayCluster for tests: one head (the usual four ports declared) and one worker group."""
    head_container = {
        "name": "ray-head",
        "image": "rayproject/ray:2.60.0",
        "ports": [{"name": port_name, "containerPort": number} for port_name, number in HEAD_PORTS],
        "env": [{"name": key, "value": value} for key, value in (env or {}).items()],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "rayVersion": "2.60.0",
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": str(num_cpus)},
                "template": {
                    "metadata": {"labels": dict(head_labels or {})},
                    "spec": {"containers": [head_container]},
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": max(workers, 4),
                    "rayStartParams": {},
                    "template": {
                        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]}
                    },
                }
            ],
        },
    }


def ready_raycluster(custom_objects_api: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """The RayCluster once `state: ready` and HeadPodReady (for `poll_until`), else None."""
    cluster: dict[str, Any] = custom_objects_api.get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", name
    )
    status = cluster.get("status") or {}
    head_ready = any(
        c.get("type") == "HeadPodReady" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return cluster if status.get("state") == "ready" and head_ready else None
