"""The real stack that the benches on simulated Ray share within one run: etcd, kube-apiserver,
kube-controller-manager, kube-proxy, KubeRay's operator v1.5.0 in a pod, raypilot's node agent running
simulated Ray, the sandbox's Gateway controller, and raypilot installed with deploy/'s RBAC
(sandbox/realkube); KubeRay's deletion-rules gate on (for P2K) and its incremental-upgrade gate (for P6).
The first bench that asks starts it (tens of seconds); it stops when the run ends. P6 asks for a stack of
its own whose pods run real Ray (`real_ray_stack`), with the same gates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from kubernetes import config
from kubernetes.client import ApiClient
from temporalio.client import Client

from bench.suite import BenchContext
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.install import Installed, install_raypilot
from sandbox.realkube.kuberay import DELETION_RULES_GATE
from sandbox.realkube.node import RayKind
from sandbox.realkube.stack import real_cluster
from tests.integration.stack import Stack, kubeconfig_worker

KEY = "real stack"
# KubeRay v1.5.0 keeps both behind alpha gates, off by default: P2K's deletionRules and P6's
# NewClusterWithIncrementalUpgrade, which raypilot runs beside KubeRay on the same manifests.
KUBERAY_GATES = f"{DELETION_RULES_GATE},RayServiceIncrementalUpgrade=true"
REAL_RAY_KEY = "real stack of real Ray"


@dataclass(frozen=True)
class SharedRealStack:
    plane: ControlPlane
    installed: Installed

    @property
    def worker_kubeconfig(self) -> Path:
        """raypilot's worker's: its ServiceAccount's token, deploy/'s ClusterRoles."""
        return self.installed.worker

    def admin_client(self) -> ApiClient:
        api_client: ApiClient = config.new_client_from_config(config_file=str(self.plane.kubeconfig))
        return api_client

    @contextlib.asynccontextmanager
    async def admin_stack(self, client: Client, task_queue: str) -> AsyncIterator[Stack]:
        """The admin's view of the stack, for workflows on `task_queue` (their worker runs elsewhere)."""
        api_client = self.admin_client()
        with contextlib.closing(api_client):
            yield Stack(client, task_queue, api_client)

    @contextlib.asynccontextmanager
    async def stack_with_worker(self, client: Client) -> AsyncIterator[Stack]:
        """The admin's view of the stack, and an in-process worker (raypilot's ServiceAccount) on a task queue
        of its own."""
        async with (
            kubeconfig_worker(client, self.worker_kubeconfig) as task_queue,
            self.admin_stack(client, task_queue) as stack,
        ):
            yield stack


@contextlib.asynccontextmanager
async def running_real_stack(
    directory: Path, ray: RayKind, gates: str = ""
) -> AsyncIterator[SharedRealStack]:
    """A real stack under `directory` with raypilot installed, for the block."""
    stack = real_cluster(directory / "kube", directory / "node", ray=ray, kuberay_feature_gates=gates)
    plane = await asyncio.to_thread(stack.__enter__)
    try:
        yield SharedRealStack(plane, await asyncio.to_thread(install_raypilot, plane))
    finally:
        await asyncio.to_thread(stack.__exit__, None, None, None)


async def _once_per_run(context: BenchContext, key: str, name: str, ray: RayKind) -> SharedRealStack:
    """The real stack kept under `key` in the run's shared resources: started by the first bench that asks,
    running until the bench run ends."""
    found = context.shared.get(key)
    if isinstance(found, SharedRealStack):
        return found
    shared = await context.resources.enter_async_context(
        running_real_stack(context.scratch(name), ray, KUBERAY_GATES)
    )
    context.shared[key] = shared
    return shared


async def shared_real_stack(context: BenchContext) -> SharedRealStack:
    return await _once_per_run(context, KEY, "real-stack", "simulated")


async def real_ray_stack(context: BenchContext) -> SharedRealStack:
    """A real stack whose pods run real Ray (P6), started once per run beside the shared one."""
    return await _once_per_run(context, REAL_RAY_KEY, "real-stack-real-ray", "real")
