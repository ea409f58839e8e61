"""The real stack the `kube_stack` fixtures run a test module on (etcd, kube-apiserver,
kube-controller-manager, kube-proxy, KubeRay's operator, the node agent with simulated or real Ray), each
started once per test process (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import config
from kubernetes.client import ApiClient
from temporalio.client import Client

from sandbox.realkube.certs import ControlPlaneCerts
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.faultproxy import FaultProxy, fault_proxy, proxied_kubeconfig
from sandbox.realkube.install import Installed
from tests.integration.stack import kubeconfig_worker

# A process whose parent runs a stack of simulated Ray already (tests/docs/test_rbac.py's audited run) is
# handed its description (RealKube.describe) in this variable, and runs on that stack instead of starting one.
SIMULATED_RAY_STACK_ENV = "RAYPILOT_TEST_SIMULATED_RAY_STACK"


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

    def describe(self, path: Path) -> Path:
        """Writes to `path` what another process needs to reach this running stack (`described`)."""
        plane = self.plane
        description = {
            "directory": str(plane.directory),
            "kube": str(plane.kube),
            "server": plane.server,
            "certs": {name: str(value) for name, value in dataclasses.asdict(plane.certs).items()},
            "kubeconfig": str(plane.kubeconfig),
            "serviceCidr": plane.service_cidr,
            "nodeDirectory": str(self.node_directory),
            "installed": {"worker": str(self.installed.worker), "controller": str(self.installed.controller)},
        }
        path.write_text(json.dumps(description))
        return path

    @classmethod
    def described(cls, path: Path) -> RealKube:
        """The stack another process runs, from its `describe` file. Its processes are the other process's:
        this one can reach the stack, not restart or stop it."""
        found: dict[str, Any] = json.loads(path.read_text())
        certs = ControlPlaneCerts(**{name: Path(value) for name, value in found["certs"].items()})
        plane = ControlPlane(
            Path(found["directory"]),
            Path(found["kube"]),
            found["server"],
            certs,
            Path(found["kubeconfig"]),
            found["serviceCidr"],
        )
        installed = Installed(Path(found["installed"]["worker"]), Path(found["installed"]["controller"]))
        return cls(plane, Path(found["nodeDirectory"]), installed)

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
