"""Test helpers: waiting on conditions with a deadline, and small ray.io/v1 manifests (a RayCluster)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class ConditionTimeout(AssertionError):
    """The awaited condition did not hold before the deadline."""


async def wait_until(
    probe: Callable[[], T | Awaitable[T | None] | None],
    *,
    within: float = 10.0,
    interval: float = 0.02,
    what: str = "condition",
) -> T:
    """Poll `probe` (sync or async) until it returns something truthy and return that; fail after `within`."""
    deadline = time.monotonic() + within
    last: object = None
    while True:
        outcome = probe()
        result = await outcome if isinstance(outcome, Awaitable) else outcome
        if result:
            return result
        last = result
        if time.monotonic() >= deadline:
            raise ConditionTimeout(f"{what} not reached within {within} s (last value: {last!r})")
        await asyncio.sleep(interval)


HEAD_PORTS = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("serve", 8000))


def raycluster_manifest(
    name: str,
    namespace: str = "default",
    *,
    workers: int = 1,
    env: dict[str, str] | None = None,
    head_labels: dict[str, str] | None = None,
    num_cpus: int = 2,
) -> dict[str, Any]:
    """A small KubeRay RayCluster for tests: one head (the usual four ports declared) and one worker group."""
    head_container = {
        "name": "ray-head",
        "image": "rayproject/ray:2.60.0",
        "ports": [{"name": port_name, "containerPort": number} for port_name, number in HEAD_PORTS],
        "env": [{"name": key, "value": value} for key, value in (env or {}).items()],
    }
    return ray_manifest(
        "RayCluster",
        name,
        namespace,
        {
            "rayVersion": "2.60.0",
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": str(num_cpus)},
                "template": {
                    "metadata": {"labels": dict(head_labels or {})},
                    "spec": {"containers": [head_container]},
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": max(workers, 4),
                    "rayStartParams": {},
                    "template": {
                        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]}
                    },
                }
            ],
        },
    )


def ray_manifest(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A ray.io/v1 object of `kind` named `name` in `namespace`, with `spec`."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def ready_raycluster(custom_objects_api: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """The RayCluster once `state: ready` and HeadPodReady (for `poll_until`), else None."""
    cluster: dict[str, Any] = custom_objects_api.get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", name
    )
    status = cluster.get("status") or {}
    head_ready = any(
        c.get("type") == "HeadPodReady" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return cluster if status.get("state") == "ready" and head_ready else None
