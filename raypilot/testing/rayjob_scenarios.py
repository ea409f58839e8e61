"""RayJob manifests and workflow helpers for the RayJobWorkflow tests."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from raypilot.testing.time_skipping import query_status
from workflows.rayjob.workflow import RayJobWorkflow

CLUSTER_SPEC: dict[str, Any] = {
    "rayVersion": "2.60.0",
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "ray-head",
                        "image": "rayproject/ray:2.60.0",
                        "ports": [
                            {"name": "gcs-server", "containerPort": 6379},
                            {"name": "dashboard", "containerPort": 8265},
                            {"name": "client", "containerPort": 10001},
                        ],
                    }
                ]
            }
        },
    },
    "workerGroupSpecs": [
        {
            "groupName": "small",
            "replicas": 1,
            "minReplicas": 1,
            "maxReplicas": 2,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]}},
        }
    ],
}


def rayjob_manifest(name: str = "sample", mode: str = "HTTPMode", **spec: Any) -> dict[str, Any]:
    """A RayJob KubeRay accepts; `spec` adds or overrides spec fields (None removes one)."""
    body: dict[str, Any] = {
        "submissionMode": mode,
        "entrypoint": "python -c 'print(42)'",
        "rayClusterSpec": copy.deepcopy(CLUSTER_SPEC),
    }
    for key, value in spec.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def workflow_id(manifest: dict[str, Any]) -> str:
    return f"rayjob/{manifest['metadata']['namespace']}/{manifest['metadata']['name']}"


async def start(client: Client, manifest: dict[str, Any], task_queue: str) -> WorkflowHandle[Any, Any]:
    return await client.start_workflow(
        RayJobWorkflow.run, manifest, id=workflow_id(manifest), task_queue=task_queue
    )


async def status_of(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    return await query_status(handle)


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 20.0) -> None:
    """Polls `check` until it holds (real time), failing after `within` seconds. The pause between looks
    grows from 50 ms to half a second: a check is usually a workflow query, and queries sent back to back
    starve the time-skipping test server (a new activity of the queried workflows then waits ~10 s for its
    dispatch)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    pause = 0.05
    while not await check():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.5)


async def until_phase(handle: WorkflowHandle[Any, Any], phase: str, within: float = 20.0) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        seen.update(await status_of(handle))
        return seen.get("jobDeploymentStatus") == phase

    await eventually(reached, within)
    return seen


async def history_event_count(handle: WorkflowHandle[Any, Any]) -> int:
    return sum([1 async for _ in handle.fetch_history_events()])


async def history_event_types(handle: WorkflowHandle[Any, Any]) -> list[str]:
    return [EventType.Name(event.event_type) async for event in handle.fetch_history_events()]


def shared_cluster() -> dict[str, Any]:
    """A ready RayCluster `shared` that exists before the RayJob (clusterSelector targets it)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "shared", "namespace": "default", "uid": "uid-shared"},
        "spec": copy.deepcopy(CLUSTER_SPEC),
        "status": {
            "state": "ready",
            "head": {"serviceName": "shared-head-svc"},
            "endpoints": {"dashboard": "8265"},
        },
    }
