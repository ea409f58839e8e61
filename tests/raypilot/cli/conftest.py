"""Fixtures for CLI tests: the test process's real stack (simulated Ray; raypilot installed from deploy/) with
a worker of the module's own as raypilot's ServiceAccount, on the session's Temporal dev server, and a way to
run `raypilot` in-process against them as the stack's admin."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client as k8s
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from raypilot.cli.common import Console
from raypilot.cli.main import main
from tests.kubes import RealKube


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


class _Pipe(io.StringIO):
    """stdout as a pipe or log file is: not a terminal, so `--watch` prints a view per change."""

    def isatty(self) -> bool:
        return False


class _Terminal(io.StringIO):
    """stdout as a terminal: `--watch` redraws the screen."""

    def isatty(self) -> bool:
        return True


@dataclass
class CliStack:
    """The environment `raypilot` sees (Temporal address, task queue, KUBECONFIG) and the real stack behind
    it."""

    env: dict[str, str]
    kube: RealKube
    client: Client
    api_client: k8s.ApiClient

    async def run(self, *argv: str, stdin: str = "", terminal: bool = False) -> CliResult:
        """`raypilot ARGV` in-process, on its own thread and event loop as the console script would run it."""
        stdout, stderr = (_Terminal() if terminal else _Pipe()), _Pipe()
        console = Console(stdout=stdout, stderr=stderr, env=dict(self.env), stdin=io.StringIO(stdin))
        code = await asyncio.to_thread(main, list(argv), console)
        return CliResult(code, stdout.getvalue(), stderr.getvalue())

    def namespace(self) -> str:
        name = f"cli-{uuid.uuid4().hex[:8]}"
        k8s.CoreV1Api(self.api_client).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
        return name

    def owned(self, plural: str, namespace: str, kind: str, name: str) -> list[str]:
        """Names of the RayClusters (plural "rayclusters") or Jobs ("jobs") with the ownership labels."""
        selector = f"ray.io/originated-from-cr-name={name},ray.io/originated-from-crd={kind}"
        if plural == "jobs":
            jobs = k8s.BatchV1Api(self.api_client).list_namespaced_job(namespace, label_selector=selector)
            return [job.metadata.name for job in jobs.items]
        listing = k8s.CustomObjectsApi(self.api_client).list_namespaced_custom_object(
            "ray.io", "v1", namespace, plural, label_selector=selector
        )
        return [item["metadata"]["name"] for item in listing["items"]]


def _cli_env(client: Client, kubeconfig: Path, task_queue: str) -> dict[str, str]:
    return {
        "KUBECONFIG": str(kubeconfig),
        "HOME": "/nonexistent",
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "RAYPILOT_TASK_QUEUE": task_queue,
    }


@pytest.fixture(scope="module")
async def cli_stack(
    dev_server_env: WorkflowEnvironment, real_kube_of_simulated_ray: RealKube
) -> AsyncIterator[CliStack]:
    """The module on the real stack: `raypilot` as its admin, a worker as raypilot's ServiceAccount."""
    client, real = dev_server_env.client, real_kube_of_simulated_ray
    async with real.admin_and_worker(client) as (api_client, task_queue):
        yield CliStack(_cli_env(client, real.admin, task_queue), real, client, api_client)
