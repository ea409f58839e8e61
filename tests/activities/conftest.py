"""Fixtures for the activity tests: the real stack of the test process (`real_kube_of_simulated_ray`,
tests/conftest.py: etcd, kube-apiserver, KubeRay's operator, pods of simulated Ray), reached by the
activities as the worker reaches it (its ServiceAccount, deploy/'s RBAC) through a fault proxy of the
module's own; namespaces made by the admin and removed with the module; helpers to run activities in an
ActivityEnvironment that records heartbeats; and the activities a worker registers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from temporalio import activity
from temporalio.testing import ActivityEnvironment

from activities.kubernetes.clusters import RayClusterActivities
from activities.registry import ActivityDependencies, build_activities
from activities.waits import KubernetesWaits
from sandbox.faults import FaultRule
from sandbox.realkube.faultproxy import FaultProxy
from sandbox.testing import raycluster_manifest
from tests.kubes import RealKube
from tests.readiness import with_quick_readiness
from wire.kubernetes import CreateObject, WaitRayCluster

# Every namespace the activity tests make carries it, so a module's end removes what its tests left.
TEST_NAMESPACE_LABEL = "raypilot.test/activities"
# A node name the real stack's node agent does not answer to: a Pod bound to it stays as the test made it.
NOBODYS_NODE = "nobodys-node"
RAY_IMAGE = "rayproject/ray:2.60.0"


@dataclass(frozen=True)
class ActivityKube:
    """The real stack as the activity tests see it: the admin's client to arrange things, and the worker's
    kubeconfig through `proxy` for the activities, whose faults and counted requests the tests set and
    read."""

    kube: RealKube
    proxy: FaultProxy
    kubeconfig_path: Path

    def api_client(self) -> client.ApiClient:
        return config.new_client_from_config(config_file=str(self.kube.admin))

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        """Replaces the API fault rules (the sandbox's JSON rules, sandbox/faults.py)."""
        self.proxy.on_loop(lambda proxy: proxy.faults.load_json(rules))

    def add_fault(self, rule: FaultRule) -> None:
        self.proxy.on_loop(lambda proxy: proxy.faults.add(rule))

    def injected(self) -> list[int]:
        """How many times each rule has injected its fault so far."""
        rules = self.proxy.on_loop(lambda proxy: proxy.faults.to_json()["rules"])
        return [rule["injected"] for rule in rules]

    def requests(self, verb_and_resource: str) -> int:
        """How many `verb_and_resource` requests ("list jobs") the activities have made so far."""
        return self.proxy.on_loop(lambda proxy: proxy.requests[verb_and_resource])


@pytest.fixture(scope="module")
def cluster(
    real_kube_of_simulated_ray: RealKube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ActivityKube]:
    kube = real_kube_of_simulated_ray
    with kube.worker_through_faults(tmp_path_factory.mktemp("activities")) as (proxy, kubeconfig):
        yield ActivityKube(kube, proxy, kubeconfig)


@pytest.fixture(scope="module")
def core_api(cluster: ActivityKube) -> Iterator[client.CoreV1Api]:
    api_client = cluster.api_client()
    core = client.CoreV1Api(api_client)
    yield core
    # What the module's tests left (RayClusters whose pods run simulated Ray heads) goes with it; the
    # garbage collector and the node agent finish it in the background.
    with contextlib.closing(api_client):
        for item in core.list_namespace(label_selector=TEST_NAMESPACE_LABEL).items:
            if item.status.phase == "Terminating":  # an earlier module's, on its way out
                continue
            try:
                core.delete_namespace(item.metadata.name, propagation_policy="Background")
            except client.ApiException as error:
                if error.status != 404:  # else gone meanwhile
                    raise


@pytest.fixture(autouse=True)
def no_fault_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    # Only for tests on the stack: the rest need none (and run in `make test-fast`).
    cluster = request.getfixturevalue("cluster") if "cluster" in request.fixturenames else None
    yield
    if cluster is not None:
        cluster.set_faults([])


async def registered_activities() -> list[tuple[str, Callable[..., Any]]]:
    """What a worker registers, as (activity name, implementation) in registration order: a name registered
    twice is listed twice. Built from an empty environment (nothing is reached)."""
    dependencies = ActivityDependencies.from_env({})
    try:
        implementations = build_activities(dependencies)
    finally:
        await dependencies.aclose()
    registered: list[tuple[str, Callable[..., Any]]] = []
    for fn in implementations:
        name = activity._Definition.must_from_callable(fn).name
        assert name is not None, f"{fn} is a dynamic activity: the worker registers none"
        registered.append((name, fn))
    return registered


def run_activity(fn: Any, arg: Any) -> Any:
    """Runs a synchronous activity on `arg` in an ActivityEnvironment, as a worker's thread would."""
    return ActivityEnvironment().run(fn, arg)


def make_dependencies(cluster: ActivityKube, access: str) -> ActivityDependencies:
    return ActivityDependencies.from_env(
        {
            "KUBECONFIG": str(cluster.kubeconfig_path),
            "RAYPILOT_DASHBOARD_ACCESS": access,
            "HOME": "/nonexistent",
        }
    )


@pytest.fixture(scope="module")
async def deps(cluster: ActivityKube) -> AsyncIterator[ActivityDependencies]:
    """Dependencies reaching the dashboards through the API server's service proxy (a worker outside)."""
    dependencies = make_dependencies(cluster, "proxy")
    yield dependencies
    await dependencies.aclose()


def new_namespace(core_api: client.CoreV1Api) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    labels = {TEST_NAMESPACE_LABEL: "true"}
    core_api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels)))
    return name


@pytest.fixture
def namespace(core_api: client.CoreV1Api) -> str:
    return new_namespace(core_api)


def small_raycluster(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    """A RayCluster without workers, its spec updated with `spec`, whose pods are ready as soon as simulated
    Ray answers (tests/readiness.py)."""
    body = raycluster_manifest(name, namespace, workers=0)
    body["spec"].update(spec)
    with_quick_readiness(body["spec"])
    return body


def versioned_serve_config(replicas: int) -> dict[str, Any]:
    """A Serve config of one application, `sandbox.apps.versioned` with `replicas` replicas, at "/"."""
    deployments = [{"name": "Versioned", "num_replicas": replicas}]
    application = {"name": "app1", "route_prefix": "/", "import_path": "sandbox.apps.versioned:app"}
    return {"applications": [{**application, "deployments": deployments}]}


def submitter_body(name: str, namespace: str) -> dict[str, Any]:
    """A K8sJobMode submitter Job whose one attempt ends at once, successfully."""
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "ray-job-submitter", "image": RAY_IMAGE, "command": ["true"]}],
                }
            },
        },
    }


def unscheduled_pod(name: str, labels: dict[str, str]) -> client.V1Pod:
    """A Pod bound to a node nobody runs, so that nothing but the test changes it. No kubelet will confirm
    its end, so it asks for none (a grace period of 0): deleting it, or its namespace, removes it at once."""
    container = client.V1Container(name="ray", image=RAY_IMAGE)
    spec = client.V1PodSpec(
        node_name=NOBODYS_NODE, containers=[container], termination_grace_period_seconds=0
    )
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name, labels=labels), spec=spec)


def running_pod(name: str, labels: dict[str, str]) -> client.V1Pod:
    """A Pod the node runs; with no readiness probe it is ready once its container runs (and until then a
    not-ready endpoint of the Services that select it)."""
    container = client.V1Container(name="serve", image=RAY_IMAGE, command=["sleep", "600"])
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[container], termination_grace_period_seconds=0),
    )


@dataclass
class RecordingEnvironment:
    """An ActivityEnvironment that keeps every heartbeat's details."""

    env: ActivityEnvironment = field(default_factory=ActivityEnvironment)
    heartbeats: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env.on_heartbeat = lambda *details: self.heartbeats.append(details[0] if details else None)

    def with_heartbeat_timeout(self, seconds: float) -> RecordingEnvironment:
        self.env.info = dataclasses.replace(self.env.info, heartbeat_timeout=timedelta(seconds=seconds))
        return self


async def ready_raycluster(
    deps: ActivityDependencies, core_api: client.CoreV1Api, *, head_token: str | None = None
) -> tuple[str, dict[str, Any]]:
    """A RayCluster `rc` without workers in a new namespace, once ready: (the namespace, the RayCluster as
    the wait saw it). With `head_token`, its Ray asks for that token, kept in the Secret `rc` as a user of
    KubeRay 1.5 sets token auth up (its `authOptions` came in a later KubeRay)."""
    namespace = new_namespace(core_api)
    body = small_raycluster("rc", namespace)
    if head_token is not None:
        secret = client.V1Secret(
            metadata=client.V1ObjectMeta(name="rc"), string_data={"auth_token": head_token}
        )
        core_api.create_namespaced_secret(namespace, secret)
        token_ref = {"secretKeyRef": {"name": "rc", "key": "auth_token"}}
        head = body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
        head["env"] += [
            {"name": "RAY_AUTH_MODE", "value": "token"},
            {"name": "RAY_AUTH_TOKEN", "valueFrom": token_ref},
        ]
    await asyncio.to_thread(
        ActivityEnvironment().run, RayClusterActivities(deps).create_raycluster, CreateObject(body)
    )
    async with asyncio.timeout(60):
        ready = await RecordingEnvironment().env.run(
            KubernetesWaits(deps).wait_raycluster, WaitRayCluster(namespace, "rc", until="ready")
        )
    assert ready.object is not None
    return namespace, ready.object


@pytest.fixture
def recording() -> RecordingEnvironment:
    return RecordingEnvironment().with_heartbeat_timeout(3.0)
