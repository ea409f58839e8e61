"""The real stack the `kube_stack` fixtures run a test module on (etcd, kube-apiserver,
kube-controller-manager, kube-proxy, KubeRay's operator, the node agent with simulated or real Ray), each
started once per test process (tests/conftest.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

from kubernetes import config
from kubernetes.client import ApiClient
from temporalio.client import Client

from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.faultproxy import FaultProxy, fault_proxy, proxied_kubeconfig
from sandbox.realkube.install import Installed
from tests.integration.stack import kubeconfig_worker


@dataclass(frozen=True)
class RealKube:
    """A running real stack (tests/conftest.py's `real_kube_of_simulated_ray` or `real_kube_of_real_ray`): its
    control plane, the node agent's directory, the admin's kubeconfig, raypilot's accounts, and the API
    server's audit log."""

    plane: ControlPlane
    node_directory: Path
    installed: Installed

    @property
    def admin(self) -> Path:
        return self.plane.kubeconfig

    @property
    def audit_log(self) -> Path:
        return self.plane.audit_log

    @contextlib.contextmanager
    def worker_through_faults(self, directory: Path) -> Iterator[tuple[FaultProxy, Path]]:
        """For the block: a fault proxy in front of the API server, and a kubeconfig (in `directory`) of
        raypilot's ServiceAccount that goes through it."""
        with fault_proxy(self.plane) as proxy:
            yield (
                proxy,
                proxied_kubeconfig(self.installed.worker, proxy, directory / "worker-faulty.kubeconfig"),
            )

    @contextlib.asynccontextmanager
    async def admin_and_worker(
        self, client: Client, task_queue: str | None = None
    ) -> AsyncIterator[tuple[ApiClient, str]]:
        """For the block: an API client with the admin's kubeconfig, and a worker with raypilot's
        ServiceAccount (deploy/'s RBAC) on `task_queue` (a worker started again there resumes its
        workflows), or on a task queue of its own."""
        api_client = config.new_client_from_config(config_file=str(self.admin))
        with contextlib.closing(api_client):
            async with kubeconfig_worker(client, self.installed.worker, task_queue) as task_queue:
                yield api_client, task_queue
