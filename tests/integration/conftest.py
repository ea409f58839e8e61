"""Integration fixtures, on the session's Temporal dev server:

- `real_stack`: one sandbox with real Ray heads and a worker per module;
- `kube_stack`: the real stack (etcd, kube-apiserver with RBAC, kube-controller-manager, KubeRay's operator,
  the node agent running pods of simulated Ray; raypilot installed as users install it, its worker
  authenticating as its ServiceAccount). The stack (`real_kube_of_simulated_ray`, tests/conftest.py) starts
  once per test process, when a test first asks for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.integration.stack import Stack, running_stack
from tests.kubes import RealKube


@pytest.fixture(scope="module")
async def real_stack(
    dev_server_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path_factory.mktemp("real"), dev_server_env.client, "real") as stack:
        yield stack


@pytest.fixture(scope="module")
async def kube_stack(
    dev_server_env: WorkflowEnvironment, real_kube_of_simulated_ray: RealKube
) -> AsyncIterator[Stack]:
    """The test's module on the real Kubernetes stack with simulated Ray, a worker of its own."""
    client = dev_server_env.client
    async with real_kube_of_simulated_ray.admin_and_worker(client) as (api_client, task_queue):
        yield Stack(client, task_queue, api_client)
