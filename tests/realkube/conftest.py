"""Fixtures of the tests that run raypilot on the real stack: each module says which Ray its stack runs (its
`plane` fixture); raypilot is installed on it as users install it, and a worker authenticates with the
ServiceAccount token of deploy/'s RBAC."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.install import Installed, install_raypilot
from tests.integration.stack import kubeconfig_worker


@pytest.fixture(scope="module")
def installed(plane: ControlPlane) -> Installed:
    return install_raypilot(plane)


@pytest.fixture(scope="module")
def worker_kubeconfig(installed: Installed) -> Path:
    return installed.worker


@pytest.fixture(scope="module")
async def task_queue(worker_kubeconfig: Path, dev_server_env: WorkflowEnvironment) -> AsyncIterator[str]:
    async with kubeconfig_worker(dev_server_env.client, worker_kubeconfig) as queue:
        yield queue
