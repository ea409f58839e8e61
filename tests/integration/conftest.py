"""Integration fixtures, on the session's Temporal dev server, on the real Kubernetes stack (etcd,
kube-apiserver with RBAC, kube-controller-manager, kube-proxy, KubeRay's operator, raypilot's node agent
running the pods; raypilot installed as users install it, its worker authenticating as its ServiceAccount):

- `kube_stack`: pods of simulated Ray (`real_kube_of_simulated_ray`, tests/conftest.py);
- `real_ray_kube_stack`: pods of real Ray (`real_kube_of_real_ray`), for the files that need real Ray and
  Serve.

Each stack starts once per test process, when a test first asks for it; each module gets a worker of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.integration.stack import Stack
from tests.kubes import RealKube

# A module's leftover Ray nodes stop in seconds; a loaded machine stretches that.
RAY_PODS_GONE_WITHIN_S = 180


@pytest.fixture(scope="module")
async def kube_stack(
    dev_server_env: WorkflowEnvironment, real_kube_of_simulated_ray: RealKube
) -> AsyncIterator[Stack]:
    """The test's module on the real Kubernetes stack with simulated Ray, a worker of its own."""
    client = dev_server_env.client
    async with real_kube_of_simulated_ray.admin_and_worker(client) as (api_client, task_queue):
        yield Stack(client, task_queue, api_client)


@pytest.fixture(scope="module")
async def real_ray_kube_stack(
    dev_server_env: WorkflowEnvironment, real_kube_of_real_ray: RealKube
) -> AsyncIterator[Stack]:
    """The test's module on the real Kubernetes stack with real Ray, a worker of its own. The stack outlives
    the module, and a real Ray node costs a core's seconds and a GiB: once the module's worker has stopped
    (so no workflow recreates anything), its namespaces' RayClusters are deleted, and the next module starts
    once their Pods are gone."""
    client = dev_server_env.client
    async with real_kube_of_real_ray.admin_and_worker(client) as (api_client, task_queue):
        stack = Stack(client, task_queue, api_client)
        yield stack
    await asyncio.to_thread(remove_namespaces, real_kube_of_real_ray, stack.namespaces)


def remove_namespaces(kube: RealKube, namespaces: list[str]) -> None:
    """Deletes `namespaces`, first their RayClusters in the foreground (each goes once its Pods are gone): a
    namespace's own deletion waits for Pods by their grace period (30 s), not by their end."""
    for namespace in namespaces:
        kube.plane.kubectl(
            "delete",
            "rayclusters",
            "--all",
            "-n",
            namespace,
            "--cascade=foreground",
            "--wait=true",
            f"--timeout={RAY_PODS_GONE_WITHIN_S}s",
        )
    if namespaces:
        kube.plane.kubectl("delete", "namespace", *namespaces, "--wait=false")
