"""What both demo steps share: what they run with (`DemoContext`), the manifests' source, starting a
workflow as `raypilot apply` does, reading Kubernetes objects without blocking the event loop (the load runs
on it), and printing changes only."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from temporalio.client import Client, WorkflowHandle
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from models.manifest import load_manifest_text
from models.naming import workflow_id
from workflows.search_attributes import RAY_KIND, RAY_NAME, RAY_NAMESPACE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKFLOW_TYPES = {"RayJob": "RayJobWorkflow", "RayService": "RayServiceWorkflow"}
POLL_INTERVAL_S = 0.25  # status query and object reads: cheap, and finer than any step the demo shows


class DemoFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class DemoPace:
    """How fast the demo's objects move. The defaults are what `raypilot demo` shows: the RayCluster deleted
    10 s after the job, and traffic moving 25 % every 5 s (30-60 s on real Ray); a test may go quicker."""

    delete_cluster_ttl_s: int = 10
    step_size_percent: int = 25
    interval_s: int = 5
    max_surge_percent: int = 50

    def upgrade_text(self) -> str:
        return (
            f"traffic moves {self.step_size_percent} % every {self.interval_s} s,"
            f" capacity surge {self.max_surge_percent} %"
        )


@dataclass(frozen=True)
class DemoContext:
    """What every demo step runs with: the Temporal client and the task queue of the demo's worker, the
    Kubernetes API and namespace of its objects, where it prints, and how fast its objects move."""

    client: Client
    task_queue: str
    custom: k8s.CustomObjectsApi
    namespace: str
    emit: Callable[[str], None]
    pace: DemoPace


def example_manifest(file_name: str, name: str, namespace: str) -> dict[str, Any]:
    """An examples/ manifest under another name (the examples are what docs/kuberay.md documents)."""
    manifest = load_manifest_text((EXAMPLES / file_name).read_text(encoding="utf-8"))
    manifest = copy.deepcopy(manifest)
    manifest["metadata"] = {"name": name, "namespace": namespace}
    return manifest


async def start_workflow(
    client: Client, task_queue: str, manifest: dict[str, Any]
) -> WorkflowHandle[Any, Any]:
    """Starts the manifest's workflow with the id and search attributes `raypilot apply` gives it."""
    kind = str(manifest["kind"])
    namespace = str(manifest["metadata"].get("namespace") or "default")
    name = str(manifest["metadata"]["name"])
    return await client.start_workflow(
        WORKFLOW_TYPES[kind],
        manifest,
        id=workflow_id(kind, namespace, name),
        task_queue=task_queue,
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(RAY_KIND, kind),
                SearchAttributePair(RAY_NAMESPACE, namespace),
                SearchAttributePair(RAY_NAME, name),
            ]
        ),
    )


async def query_status(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    status: dict[str, Any] = await handle.query("status")
    return status


def _read_custom(api: k8s.CustomObjectsApi, group: str, plural: str, namespace: str, name: str) -> Any:
    version = "v1"
    try:
        return api.get_namespaced_custom_object(group, version, namespace, plural, name)
    except k8s.ApiException as error:
        if error.status == 404:
            return None
        raise


async def read_custom(
    api: k8s.CustomObjectsApi, group: str, plural: str, namespace: str, name: str
) -> dict[str, Any] | None:
    """The object, or None when it does not exist."""
    found = await asyncio.to_thread(_read_custom, api, group, plural, namespace, name)
    return dict(found) if isinstance(found, dict) else None


@dataclass
class ChangePrinter:
    """Prints a live line only when its content (without the elapsed time) changed, so the output reads as a
    log of changes rather than a stream of identical polls."""

    emit: Callable[[str], None]
    last_key: str = field(default="", init=False)

    def show(self, key: str, line: str) -> None:
        if key != self.last_key:
            self.last_key = key
            self.emit(line)
