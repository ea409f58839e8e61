"""The RayCluster controller on an in-memory Store with a tiny fake Ray head (no Ray, no HTTP API server)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from sandbox.controllers.raycluster import RayClusterController
from sandbox.store import Store
from sandbox.testing import wait_until


class FakeHead:
    """Answers /api/version on a free port (the dashboard) and / on another (Serve), echoing its env."""

    instances: list[FakeHead] = []

    def __init__(self, name: str, env: Mapping[str, str], params: Mapping[str, str], pod_ip: str) -> None:
        self.name, self.env, self.params = name, dict(env), dict(params)
        self.ports: dict[str, int] = {}
        self.starts = 0
        self.running = False
        self._runners: list[web.AppRunner] = []
        FakeHead.instances.append(self)

    @property
    def pids(self) -> list[int]:
        return []

    async def start(self) -> None:
        async def version(_: web.Request) -> web.Response:
            return web.json_response({"version": "4", "head": self.name, "app": self.env.get("APP_VERSION")})

        for key in ("dashboard", "serve"):
            app = web.Application()
            app.router.add_get("/{tail:.*}", version)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.ports[key] = runner.addresses[0][1]
            self._runners.append(runner)
        self.starts += 1
        self.running = True

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        self.running = False


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    store = Store()
    controller = RayClusterController(store, FakeHead, requeue_s=0.05, head_retry_s=0.1)
    await controller.start()
    store.controller = controller  # type: ignore[attr-defined]
    yield store
    await controller.stop()
    store.close()


def controller_of(store: Store) -> RayClusterController:
    return store.controller  # type: ignore[attr-defined, no-any-return]


def manifest(
    name: str,
    *,
    replicas: int = 1,
    restart_policy: str | None = None,
    sidecar: bool = False,
    annotations: dict[str, str] | None = None,
    env: list[Any] | None = None,
) -> dict[str, Any]:
    head_spec: dict[str, Any] = {
        "containers": [
            {
                "name": "ray-head",
                "image": "rayproject/ray",
                "env": env or [],
                "ports": [
                    {"name": "dashboard", "containerPort": 8265},
                    {"name": "serve", "containerPort": 8000},
                ],
            }
        ]
    }
    if sidecar:
        head_spec["containers"].append({"name": "log-sidecar", "image": "busybox"})
    if restart_policy:
        head_spec["restartPolicy"] = restart_policy
    return {
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": {
            "rayVersion": "2.60.0",
            "headGroupSpec": {"rayStartParams": {"num-cpus": 1}, "template": {"spec": head_spec}},
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": replicas,
                    "minReplicas": 0,
                    "maxReplicas": 5,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "w"}]}},
                }
            ],
        },
    }


def get_cluster(store: Store, name: str) -> dict[str, Any]:
    return store.get("ray.io/v1", "RayCluster", "default", name)


def pods(store: Store, name: str, node_type: str) -> list[dict[str, Any]]:
    return store.list(
        "v1", "Pod", "default", label_selector=f"ray.io/cluster={name},ray.io/node-type={node_type}"
    )


def is_ready(store: Store, name: str) -> dict[str, Any] | None:
    rc = get_cluster(store, name)
    conditions = {c["type"]: c["status"] for c in (rc.get("status") or {}).get("conditions") or []}
    ok = rc.get("status", {}).get("state") == "ready" and conditions.get("HeadPodReady") == "True"
    return rc if ok else None


def head_ready(store: Store, name: str) -> bool:
    conditions = {
        c["type"]: c["status"] for c in get_cluster(store, name).get("status", {}).get("conditions", [])
    }
    return conditions.get("HeadPodReady") == "True"


async def http_get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.json()


async def test_raycluster_gets_head_pod_service_workers_and_ready_status(store: Store) -> None:
    store.create(
        "v1", "Secret", {"metadata": {"name": "app"}, "data": {"v": base64.b64encode(b"v1").decode()}}
    )
    env = [{"name": "APP_VERSION", "valueFrom": {"secretKeyRef": {"name": "app", "key": "v"}}}]
    store.create("ray.io/v1", "RayCluster", manifest("rc", replicas=2, env=env))

    rc = await wait_until(lambda: is_ready(store, "rc"), what="RayCluster ready")
    [head] = pods(store, "rc", "head")
    assert head["status"]["phase"] == "Running"
    assert head["status"]["podIP"].startswith("127.0.3.")
    assert head["status"]["containerStatuses"][0]["state"]["running"]
    service = store.get("v1", "Service", "default", "rc-head-svc")
    assert rc["status"]["head"] == {
        "podName": head["metadata"]["name"],
        "podIP": head["status"]["podIP"],
        "serviceName": "rc-head-svc",
        "serviceIP": service["spec"]["clusterIP"],
    }
    assert rc["status"]["endpoints"] == {"dashboard": "8265", "serve": "8000"}
    assert rc["status"]["readyWorkerReplicas"] == 2
    assert rc["status"]["observedGeneration"] == 1
    assert len(pods(store, "rc", "worker")) == 2
    fake = next(h for h in FakeHead.instances if h.name.endswith(head["metadata"]["name"]))
    assert fake.params == {"num-cpus": "1"}
    # The pod IP answers on the declared container port, with the head container's env behind it.
    answer = await http_get_json(f"http://{head['status']['podIP']}:8265/api/version")
    assert answer["app"] == "v1"
    worker_ip = pods(store, "rc", "worker")[0]["status"]["podIP"]
    assert (await http_get_json(f"http://{worker_ip}:8000/"))["head"] == fake.name  # worker serve port


async def test_worker_scaling_and_group_suspend(store: Store) -> None:
    store.create("ray.io/v1", "RayCluster", manifest("scale", replicas=1))
    await wait_until(lambda: is_ready(store, "scale"))

    def set_group(**fields: Any) -> None:
        rc = get_cluster(store, "scale")
        rc["spec"]["workerGroupSpecs"][0].update(fields)
        store.update("ray.io/v1", "RayCluster", rc)

    set_group(replicas=4)
    await wait_until(
        lambda: (
            len(pods(store, "scale", "worker")) == 4
            and get_cluster(store, "scale")["status"]["readyWorkerReplicas"] == 4
        ),
        what="scaled up to 4",
    )
    set_group(replicas=9)  # clamped to maxReplicas 5
    await wait_until(lambda: len(pods(store, "scale", "worker")) == 5)
    set_group(replicas=2)
    await wait_until(lambda: len(pods(store, "scale", "worker")) == 2)
    set_group(suspend=True)
    await wait_until(lambda: not pods(store, "scale", "worker"), what="suspended group has no pods")
    # The status is written after the pods go: wait for the one that counts the suspended group out.
    await wait_until(
        lambda: (
            is_ready(store, "scale") and get_cluster(store, "scale")["status"]["desiredWorkerReplicas"] == 0
        ),
        what="status without the suspended group's replicas",
    )
    assert pods(store, "scale", "head")


async def test_cluster_suspend_and_resume(store: Store) -> None:
    store.create("ray.io/v1", "RayCluster", manifest("sus", replicas=1))
    await wait_until(lambda: is_ready(store, "sus"))
    first_head = controller_of(store).head_runtime("default", "sus")
    assert first_head is not None
    rc = get_cluster(store, "sus")
    rc["spec"]["suspend"] = True
    store.update("ray.io/v1", "RayCluster", rc)
    await wait_until(lambda: get_cluster(store, "sus")["status"].get("state") == "suspended")
    assert not pods(store, "sus", "head")
    assert not pods(store, "sus", "worker")
    assert not first_head.running
    rc = get_cluster(store, "sus")
    rc["spec"]["suspend"] = False
    store.update("ray.io/v1", "RayCluster", rc)
    await wait_until(lambda: is_ready(store, "sus") and len(pods(store, "sus", "worker")) == 1)


@pytest.mark.parametrize(
    ("restart_policy", "sidecar", "phase"),
    [("Never", True, "Running"), ("Always", False, "Failed"), ("Never", False, "Failed")],
)
async def test_unhealthy_head_pod_is_deleted_then_recreated(
    store: Store, restart_policy: str, sidecar: bool, phase: str
) -> None:
    name = f"health-{restart_policy.lower()}-{int(sidecar)}"
    store.create("ray.io/v1", "RayCluster", manifest(name, restart_policy=restart_policy, sidecar=sidecar))
    await wait_until(lambda: is_ready(store, name))
    [old] = pods(store, name, "head")
    statuses = old["status"]["containerStatuses"]
    statuses[0]["state"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    old["status"].update(phase=phase, containerStatuses=statuses)
    store.update("v1", "Pod", old, status=True)

    def replaced() -> bool:
        heads = pods(store, name, "head")
        return bool(heads) and heads[0]["metadata"]["name"] != old["metadata"]["name"]

    await wait_until(replaced, what="head pod recreated")
    await wait_until(lambda: is_ready(store, name))


async def test_running_head_with_terminated_ray_and_restart_always_is_kept(store: Store) -> None:
    store.create("ray.io/v1", "RayCluster", manifest("keep", restart_policy="Always", sidecar=True))
    await wait_until(lambda: is_ready(store, "keep"))
    controller = controller_of(store)
    [old] = pods(store, "keep", "head")

    await controller.stop_dashboard("default", "keep")
    await wait_until(lambda: not head_ready(store, "keep"), what="HeadPodReady False")
    [pod] = pods(store, "keep", "head")
    assert pod["metadata"]["name"] == old["metadata"]["name"]
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    assert pod["status"]["containerStatuses"][1]["state"]["running"]
    with pytest.raises(aiohttp.ClientError):
        await http_get_json(f"http://{pod['status']['podIP']}:8265/api/version")

    await controller.start_dashboard("default", "keep")
    await wait_until(lambda: head_ready(store, "keep"), what="HeadPodReady True again")
    [pod] = pods(store, "keep", "head")
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 1
    assert (await http_get_json(f"http://{pod['status']['podIP']}:8265/api/version"))["version"] == "4"


async def test_provisioned_head_not_restarted_when_disabled(store: Store) -> None:
    annotations = {"ray.io/disable-provisioned-head-restart": "true"}
    store.create("ray.io/v1", "RayCluster", manifest("once", annotations=annotations))
    await wait_until(lambda: is_ready(store, "once"))
    [head] = pods(store, "once", "head")
    store.delete("v1", "Pod", "default", head["metadata"]["name"])
    await wait_until(lambda: not head_ready(store, "once"))
    await wait_until(lambda: get_cluster(store, "once")["status"]["head"].get("podName") is None)
    assert not pods(store, "once", "head")


async def test_deleted_head_pod_is_recreated_and_cluster_deletion_stops_everything(store: Store) -> None:
    store.create("ray.io/v1", "RayCluster", manifest("gone", replicas=2))
    await wait_until(lambda: is_ready(store, "gone"))
    controller = controller_of(store)
    [head] = pods(store, "gone", "head")
    first = controller.head_runtime("default", "gone")
    store.delete("v1", "Pod", "default", head["metadata"]["name"])

    def recreated() -> bool:
        # The runtime, not the status alone: the status still says ready from before while the new head
        # pod's Ray starts (a full run read it then and found no runtime yet).
        runtime = controller.head_runtime("default", "gone")
        return (
            runtime is not None
            and runtime.running
            and runtime.pod_name != head["metadata"]["name"]
            and is_ready(store, "gone") is not None
        )

    await wait_until(recreated)
    assert first is not None
    assert not first.running
    second = controller.head_runtime("default", "gone")
    assert second is not None
    [new_head] = pods(store, "gone", "head")
    assert new_head["metadata"]["name"] == second.pod_name
    used_ips = {p["status"]["podIP"] for p in pods(store, "gone", "head") + pods(store, "gone", "worker")}

    store.delete("ray.io/v1", "RayCluster", "default", "gone")
    # The addresses go back once every pod's processes have stopped, a moment after the head says it stopped.
    await wait_until(
        lambda: (
            not second.running
            and controller.head_runtime("default", "gone") is None
            and not used_ips & store.pools.pods.allocated
        )
    )
    assert not pods(store, "gone", "head")
    assert store.try_get("v1", "Service", "default", "gone-head-svc") is None


async def test_token_auth_creates_secret_and_passes_token(store: Store) -> None:
    rc = manifest("auth")
    rc["spec"]["authOptions"] = {"mode": "token"}
    store.create("ray.io/v1", "RayCluster", rc)
    await wait_until(lambda: is_ready(store, "auth"))
    secret = store.get("v1", "Secret", "default", "auth")
    token = base64.b64decode(secret["data"]["auth_token"]).decode()
    [head] = pods(store, "auth", "head")
    fake = next(h for h in FakeHead.instances if h.name.endswith(head["metadata"]["name"]))
    assert fake.env["RAY_AUTH_MODE"] == "token"
    assert fake.env["RAY_AUTH_TOKEN"] == token


class ProcessBackedHead(FakeHead):
    """A fake head with a real child process standing for Ray, so that it can die on its own."""

    def __init__(self, name: str, env: Mapping[str, str], params: Mapping[str, str], pod_ip: str) -> None:
        super().__init__(name, env, params, pod_ip)
        self.process: asyncio.subprocess.Process | None = None

    @property
    def pids(self) -> list[int]:
        return [self.process.pid] if self.process is not None and self.process.returncode is None else []

    async def start(self) -> None:
        await super().start()
        self.process = await asyncio.create_subprocess_exec("sleep", "300")

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await super().stop()


async def test_a_head_that_dies_is_restarted_in_place() -> None:
    store = Store()
    controller = RayClusterController(
        store, ProcessBackedHead, requeue_s=0.05, head_retry_s=0.1, liveness_interval_s=0.05
    )
    await controller.start()
    try:
        store.create("ray.io/v1", "RayCluster", manifest("crashy"))
        await wait_until(lambda: is_ready(store, "crashy"))
        runtime = controller.head_runtime("default", "crashy")
        assert runtime is not None
        [head] = pods(store, "crashy", "head")
        crashed = runtime.head.process  # type: ignore[attr-defined]
        crashed.kill()
        await crashed.wait()

        def restarted() -> bool:
            [pod] = pods(store, "crashy", "head")
            return pod["status"]["containerStatuses"][0]["restartCount"] == 1 and head_ready(store, "crashy")

        await wait_until(restarted, what="Ray container restarted in the same pod")
        [same] = pods(store, "crashy", "head")
        assert same["metadata"]["name"] == head["metadata"]["name"]
        assert controller.pids
        assert crashed.pid not in controller.pids
    finally:
        await controller.stop()
        store.close()


async def test_a_template_change_does_not_roll_running_pods_as_in_kuberay(store: Store) -> None:
    """KubeRay's RayCluster controller never replaces running pods when a template changes (only a pod that
    is deleted comes back with the new template): `upgradeStrategy: None` relies on exactly that."""
    env_v1 = [{"name": "APP_VERSION", "value": "v1"}]
    store.create("ray.io/v1", "RayCluster", manifest("tmpl", replicas=2, env=env_v1))
    await wait_until(lambda: is_ready(store, "tmpl"))
    controller = controller_of(store)
    [head] = pods(store, "tmpl", "head")
    workers = {pod["metadata"]["uid"] for pod in pods(store, "tmpl", "worker")}
    runtime = controller.head_runtime("default", "tmpl")
    rc = get_cluster(store, "tmpl")
    rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "APP_VERSION", "value": "v2"}
    ]
    rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "other"
    store.update("ray.io/v1", "RayCluster", rc)
    generation = get_cluster(store, "tmpl")["metadata"]["generation"]
    await wait_until(
        lambda: get_cluster(store, "tmpl")["status"].get("observedGeneration") == generation,
        what="the new generation reconciled",
    )
    [same_head] = pods(store, "tmpl", "head")
    assert same_head["metadata"]["uid"] == head["metadata"]["uid"]
    assert {pod["metadata"]["uid"] for pod in pods(store, "tmpl", "worker")} == workers
    assert controller.head_runtime("default", "tmpl") is runtime
    ip = same_head["status"]["podIP"]
    assert (await http_get_json(f"http://{ip}:8265/api/version"))["app"] == "v1"
    # A head pod deleted by someone comes back from the new template.
    store.delete("v1", "Pod", "default", head["metadata"]["name"])

    def new_head_ready() -> bool:
        heads = pods(store, "tmpl", "head")
        # Running: the status's HeadPodReady may still be the old head's while the new one starts.
        return (
            bool(heads)
            and heads[0]["metadata"]["uid"] != head["metadata"]["uid"]
            and (heads[0].get("status") or {}).get("phase") == "Running"
            and head_ready(store, "tmpl")
        )

    await wait_until(new_head_ready, what="head pod recreated")
    [new_head] = pods(store, "tmpl", "head")
    answer = await http_get_json(f"http://{new_head['status']['podIP']}:8265/api/version")
    assert answer["app"] == "v2"
