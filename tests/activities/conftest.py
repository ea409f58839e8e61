"""Fixtures for the activity tests: one simulated sandbox per module (its Kubernetes API, controllers and
simulated Ray dashboards on a background thread), activity dependencies pointing at it, a fresh namespace per
test, and helpers to run activities in an ActivityEnvironment that records heartbeats.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

import sandbox.store
from activities.kubernetes.clusters import RayClusterActivities
from activities.registry import ActivityDependencies
from activities.waits import KubernetesWaits
from sandbox.faults import FaultInjector
from sandbox.ray.simulated_timings import SimulationTimings
from sandbox.testing import SandboxThread, private_pools, raycluster_manifest
from wire.kubernetes import CreateObject, WaitRayCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxThread]:
    workdir: Path = tmp_path_factory.mktemp("sandbox")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox.store, "standard_pools", private_pools)
        with SandboxThread(
            workdir, "simulated", simulated_options={"timings": SimulationTimings.fast()}
        ) as thread:
            yield thread


@pytest.fixture(scope="module")
def core_api(cluster: SandboxThread) -> Iterator[client.CoreV1Api]:
    api_client = cluster.api_client()
    yield client.CoreV1Api(api_client)
    api_client.close()


def make_dependencies(cluster: SandboxThread, access: str) -> ActivityDependencies:
    return ActivityDependencies.from_env(
        {
            "KUBECONFIG": str(cluster.kubeconfig_path),
            "RAYPILOT_DASHBOARD_ACCESS": access,
            "HOME": "/nonexistent",
        }
    )


@pytest.fixture(scope="module")
async def deps(cluster: SandboxThread) -> AsyncIterator[ActivityDependencies]:
    """Dependencies reaching the dashboards through the API server's service proxy (a worker outside)."""
    dependencies = make_dependencies(cluster, "proxy")
    yield dependencies
    await dependencies.aclose()


@pytest.fixture
def namespace(core_api: client.CoreV1Api) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    core_api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


@pytest.fixture
def faults(cluster: SandboxThread) -> Iterator[FaultInjector]:
    injector = cluster.sandbox.faults
    yield injector

    async def clear() -> None:
        injector.clear()

    cluster.call(clear)


def set_faults(cluster: SandboxThread, rules: list[dict[str, Any]]) -> None:
    """Replace the API fault rules from the sandbox's own loop (the injector is not thread-safe)."""

    async def load() -> None:
        cluster.sandbox.faults.load_json(rules)

    cluster.call(load)


@dataclass
class RecordingEnvironment:
    """An ActivityEnvironment that keeps every heartbeat's details."""

    env: ActivityEnvironment = field(default_factory=ActivityEnvironment)
    heartbeats: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env.on_heartbeat = lambda *details: self.heartbeats.append(details[0] if details else None)

    def with_heartbeat_timeout(self, seconds: float) -> RecordingEnvironment:
        import dataclasses

        self.env.info = dataclasses.replace(self.env.info, heartbeat_timeout=timedelta(seconds=seconds))
        return self


async def ready_raycluster(
    deps: ActivityDependencies, core_api: client.CoreV1Api, **spec: Any
) -> tuple[str, dict[str, Any]]:
    """A RayCluster `rc` without workers (its spec updated with `spec`) in a new namespace, once ready:
    (the namespace, the RayCluster as the wait saw it)."""
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    core_api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    body = raycluster_manifest("rc", namespace, workers=0)
    body["spec"].update(spec)
    await asyncio.to_thread(
        ActivityEnvironment().run, RayClusterActivities(deps).create_raycluster, CreateObject(body)
    )
    async with asyncio.timeout(30):
        ready = await RecordingEnvironment().env.run(
            KubernetesWaits(deps).wait_raycluster, WaitRayCluster(namespace, "rc", until="ready")
        )
    assert ready.object is not None
    return namespace, ready.object


@pytest.fixture
def recording() -> RecordingEnvironment:
    return RecordingEnvironment().with_heartbeat_timeout(3.0)
