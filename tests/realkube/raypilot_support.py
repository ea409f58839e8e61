"""What tests/realkube's raypilot tests build their cases from: reading objects with kubectl, the fault mix
for the fault proxy, a record of every object that existed (to tell an object created twice), and
`raypilot controller` run in-process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from models.features import FeatureGates
from raypilot.controller.kube import ControllerKube
from raypilot.controller.loop import Controller
from raypilot.controller.temporal_io import ControllerTemporal
from sandbox.faults import FaultRule
from sandbox.listwatch import SYNC, list_then_watch
from sandbox.realkube.controlplane import ControlPlane

SUBMITTED_BY_JOB = "ray.io/originated-from-crd=RayJob,ray.io/originated-from-cr-name=job"
RAY_PODS = "ray.io/is-ray-node=yes"


def objects(plane: ControlPlane, kind: str, namespace: str, selector: str) -> list[dict[str, Any]]:
    listing = plane.kubectl("get", kind, "-n", namespace, "-l", selector, "-o", "json")
    items: list[dict[str, Any]] = json.loads(listing)["items"]
    return items


# The first RayCluster create and the first Job create fail for sure (409, then 429 with Retry-After), so
# every kind of fault is met whatever the order of requests; the rest are drawn at random.
WRITES = frozenset({"create", "update", "patch"})
FAULTS = [
    FaultRule(frozenset({"create"}), frozenset({"rayclusters"}), error_rate=1.0, status=409, times=1),
    FaultRule(
        frozenset({"create"}), frozenset({"jobs"}), error_rate=1.0, status=429, retry_after_seconds=1, times=1
    ),
    FaultRule(error_rate=0.10, status=500),
    FaultRule(verbs=WRITES, error_rate=0.10, status=409),
    FaultRule(error_rate=0.05, status=429, retry_after_seconds=1),
    FaultRule(latency_seconds=0.05),
]


@contextlib.contextmanager
def uids_seen(plane: ControlPlane, namespace: str) -> Iterator[dict[str, set[str]]]:
    """Every RayCluster and Job that exists in `namespace` at any moment of the block, by kind (admin
    credentials, no faults): an object created twice shows as two uids even if one was deleted at once."""
    seen: dict[str, set[str]] = {"RayCluster": set(), "Job": set()}
    api = config.new_client_from_config(config_file=str(plane.kubeconfig))
    custom, batch = k8s.CustomObjectsApi(api), k8s.BatchV1Api(api)

    def clusters(**options: Any) -> Any:
        return custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", **options)

    def jobs(**options: Any) -> Any:
        return batch.list_namespaced_job(namespace, **options)

    def record(kind: str, event: str, obj: dict[str, Any]) -> None:
        for item in obj.get("items") or [] if event == SYNC else [obj]:
            seen[kind].add(item["metadata"]["uid"])

    stop = threading.Event()
    readers = [
        threading.Thread(target=list_then_watch, args=(kind, call, record, stop), daemon=True)
        for kind, call in (("RayCluster", clusters), ("Job", jobs))
    ]
    for reader in readers:
        reader.start()
    try:
        yield seen
    finally:
        stop.set()
        api.close()


async def start(
    env: WorkflowEnvironment, manifest: dict[str, Any], task_queue: str
) -> WorkflowHandle[Any, Any]:
    """The manifest's workflow, with the id docs/contract.md gives it."""
    kind, metadata = str(manifest["kind"]), manifest["metadata"]
    return await env.client.start_workflow(
        f"{kind}Workflow",
        manifest,
        id=f"{kind.lower()}/{metadata['namespace']}/{metadata['name']}",
        task_queue=task_queue,
    )


@contextlib.asynccontextmanager
async def running_controller(
    kubeconfig: Path, env: WorkflowEnvironment, task_queue: str
) -> AsyncIterator[None]:
    """`raypilot controller`'s loop with its ServiceAccount's credentials (deploy/controller's RBAC)."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    controller = Controller(
        ControllerKube(api_client), ControllerTemporal(env.client, task_queue), FeatureGates(), 0.5
    )
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        yield
    finally:
        stop.set()
        await task
        api_client.close()
