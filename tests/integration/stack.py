"""What an integration test talks to (`Stack`): the Temporal dev server, a worker with every real workflow and
activity, and the real Kubernetes stack's API (tests/integration/conftest.py). The worker runs on the test's
event loop; the official (blocking) Kubernetes client is used from tests through `asyncio.to_thread` or
directly for quick reads.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from temporalio.client import Client, WorkflowHandle
from temporalio.common import TypedSearchAttributes

from activities.registry import ActivityDependencies, build_activities
from models.naming import workflow_id
from raypilot.testing.worker import running_worker
from sandbox.testing import ConditionTimeout, wait_until
from tests.workflows.history_digest import history_digest

WORKFLOW_TYPES = {"RayJob": "RayJobWorkflow", "RayService": "RayServiceWorkflow"}
# How much of a run's history a timed-out wait shows (its most recent events).
HISTORY_LINES_SHOWN = 60


@dataclass
class Stack:
    """Temporal (client, task queue) and the real stack's Kubernetes API, as an integration test uses them."""

    client: Client
    task_queue: str
    api_client: k8s.ApiClient
    namespaces: list[str] = field(default_factory=list)  # made by `namespace()`, in order

    @property
    def custom(self) -> k8s.CustomObjectsApi:
        return k8s.CustomObjectsApi(self.api_client)

    @property
    def core(self) -> k8s.CoreV1Api:
        return k8s.CoreV1Api(self.api_client)

    @property
    def batch(self) -> k8s.BatchV1Api:
        return k8s.BatchV1Api(self.api_client)

    async def start(self, manifest: dict[str, Any]) -> WorkflowHandle[Any, Any]:
        """Start the workflow for a KubeRay manifest, as `raypilot apply` or the temporal CLI would."""
        kind = manifest["kind"]
        metadata = manifest["metadata"]
        namespace = metadata.get("namespace", "default")
        return await self.client.start_workflow(
            WORKFLOW_TYPES[kind],
            manifest,
            id=workflow_id(kind, namespace, metadata["name"]),
            task_queue=self.task_queue,
            execution_timeout=timedelta(minutes=30),
            search_attributes=TypedSearchAttributes.empty,
        )

    def namespace(self) -> str:
        """A fresh Kubernetes namespace, so tests of one module do not see each other's objects."""
        name = f"it-{uuid.uuid4().hex[:8]}"
        self.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
        self.namespaces.append(name)
        return name

    async def status(self, handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
        status: dict[str, Any] = await handle.query("status")
        return status

    async def wait_status(
        self,
        handle: WorkflowHandle[Any, Any],
        holds: Callable[[dict[str, Any]], bool],
        *,
        within: float = 60.0,
        what: str = "status",
    ) -> dict[str, Any]:
        """Poll the `status` query until `holds` is true for it; returns that status. On a timeout the failure
        shows the last status and the end of the run's history (what it was doing)."""
        last: dict[str, Any] = {}

        async def probe() -> dict[str, Any] | None:
            nonlocal last
            last = await self.status(handle)
            return last if holds(last) else None

        try:
            return await wait_until(probe, within=within, interval=0.2, what=what)
        except ConditionTimeout as timeout:
            digest = await history_digest(handle)
            recent = "\n".join(digest[-HISTORY_LINES_SHOWN:])
            message = f"{timeout}; last status {last!r}; the run's last events:\n{recent}"
            raise ConditionTimeout(message) from None

    def exists(self, plural: str, namespace: str, name: str) -> bool:
        try:
            if plural == "jobs":
                self.batch.read_namespaced_job(name, namespace)
            elif plural == "services":
                self.core.read_namespaced_service(name, namespace)
            else:
                self.custom.get_namespaced_custom_object("ray.io", "v1", namespace, plural, name)
        except k8s.ApiException as error:
            if error.status == 404:
                return False
            raise
        return True


@asynccontextmanager
async def kubeconfig_worker(
    client: Client, kubeconfig: Path, task_queue: str | None = None
) -> AsyncIterator[str]:
    """A worker with the real activities, its Kubernetes credentials from `kubeconfig` (dashboards through
    the API server proxy, as a worker outside the cluster), and the Temporal client its earlier-run check
    uses; yields its task queue."""
    dependencies = ActivityDependencies.from_env(
        {"KUBECONFIG": str(kubeconfig), "RAYPILOT_DASHBOARD_ACCESS": "proxy", "HOME": "/nonexistent"},
        temporal_client=client,
    )
    try:
        async with running_worker(
            client,
            activities=build_activities(dependencies),
            task_queue=task_queue,
            replay_every_task=False,
        ) as queue:
            yield queue
    finally:
        await dependencies.aclose()
