"""The Service controller: clusterIP:port proxies that follow selectors and pod readiness."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from sandbox.controllers.service import PodIndex, ServiceController, selected_pods, service_targets
from sandbox.store import Store

SERVICE_PORT = 8000


def service_manifest(
    name: str, selector: dict[str, str], cluster_ip: str, target_port: int | str = "serve"
) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "clusterIP": cluster_ip,
            "selector": selector,
            "ports": [{"name": "serve", "port": SERVICE_PORT, "targetPort": target_port}],
        },
    }


@pytest.mark.parametrize(
    ("pods", "target_port", "publish_not_ready", "expected"),
    [
        pytest.param(
            [("a", "10.0.0.1", True, {"serve": 8000})], "serve", False, [("10.0.0.1", 8000)], id="named"
        ),
        pytest.param(
            [("a", "10.0.0.1", True, {"serve": 8000})], 9000, False, [("10.0.0.1", 9000)], id="number"
        ),
        pytest.param([("a", "10.0.0.1", True, {"http": 80})], "serve", False, [], id="name-not-on-pod"),
        pytest.param([("a", "10.0.0.1", False, {"serve": 1})], "serve", False, [], id="not-ready"),
        pytest.param(
            [("a", "10.0.0.1", False, {"serve": 1})], "serve", True, [("10.0.0.1", 1)], id="publish"
        ),
        pytest.param([("a", None, True, {"serve": 1})], "serve", True, [], id="no-ip-yet"),
        pytest.param(
            [("b", "10.0.0.2", True, {"serve": 2}), ("a", "10.0.0.1", True, {"serve": 1})],
            "serve",
            False,
            [("10.0.0.1", 1), ("10.0.0.2", 2)],
            id="sorted-by-pod-name",
        ),
    ],
)
def test_service_targets(make_pod, pods, target_port, publish_not_ready, expected) -> None:
    service = service_manifest("s", {"app": "x"}, "127.0.1.5", target_port)
    service["spec"]["publishNotReadyAddresses"] = publish_not_ready
    manifests = [make_pod(n, ip, {"app": "x"}, ports=ports, ready=ready) for n, ip, ready, ports in pods]
    manifests.append(make_pod("other", "10.0.0.9", {"app": "y"}, ports={"serve": 1}))
    assert service_targets(service, manifests, service["spec"]["ports"][0]) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"ray.io/cluster": "a", "ray.io/node-type": "head"}, ["a-head"]),
        ({"ray.io/cluster": "a"}, ["a-head", "a-worker"]),
        ({"ray.io/node-type": "head"}, ["a-head", "b-head"]),
        ({"ray.io/cluster": "c"}, []),
        ({}, []),
    ],
)
def test_pod_index_candidates_hold_every_selected_pod_of_the_namespace(make_pod, selector, expected) -> None:
    pods = [
        make_pod("a-head", "10.0.0.1", {"ray.io/cluster": "a", "ray.io/node-type": "head"}),
        make_pod("a-worker", "10.0.0.2", {"ray.io/cluster": "a", "ray.io/node-type": "worker"}),
        make_pod("b-head", "10.0.0.3", {"ray.io/cluster": "b", "ray.io/node-type": "head"}),
        make_pod("elsewhere", "10.0.0.4", {"ray.io/cluster": "a", "ray.io/node-type": "head"}, namespace="x"),
    ]
    service = service_manifest("s", selector, "127.0.1.5")
    candidates = PodIndex(pods).candidates(service)
    assert all(pod["metadata"]["namespace"] == "default" for pod in candidates)
    selected = [pod["metadata"]["name"] for pod in selected_pods(service, candidates)]
    assert selected == [pod["metadata"]["name"] for pod in selected_pods(service, pods)] == expected


@pytest.fixture
async def services(store: Store) -> AsyncIterator[ServiceController]:
    controller = ServiceController(store)
    await controller.start()
    yield controller
    await controller.stop()


async def get_text(url: str) -> str:
    # A new connection each time: the Service proxy picks a pod per connection, like kube-proxy.
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.text()


async def test_selector_switch_moves_new_connections_and_keeps_in_flight_ones(
    store: Store, services: ServiceController, make_backend, make_pod, free_cluster_ip, eventually
) -> None:
    blue, green = await make_backend("blue"), await make_backend("green")
    store.create("v1", "Pod", make_pod("blue", blue.host, {"color": "blue"}, ports={"serve": blue.port}))
    store.create("v1", "Pod", make_pod("green", green.host, {"color": "green"}, ports={"serve": green.port}))
    ip = free_cluster_ip()
    store.create("v1", "Service", service_manifest("serve-svc", {"color": "blue"}, ip))
    await eventually(
        lambda: (
            services.listen_address("default", "serve-svc", SERVICE_PORT) is not None
            and services.targets("default", "serve-svc", SERVICE_PORT) == [(blue.host, blue.port)]
        )
    )
    url = f"http://{ip}:{SERVICE_PORT}"
    assert await get_text(f"{url}/a") == "blue /a"

    async with aiohttp.ClientSession() as session, session.get(f"{url}/stream") as streaming:
        await asyncio.wait_for(blue.stream_started.wait(), 5)
        store.patch(
            "v1",
            "Service",
            "default",
            "serve-svc",
            {"spec": {"selector": {"color": "green"}}},
            "application/merge-patch+json",
        )
        await eventually(
            lambda: services.targets("default", "serve-svc", SERVICE_PORT) == [(green.host, green.port)]
        )
        assert await get_text(f"{url}/b") == "green /b"
        blue.release_stream.set()
        assert await streaming.read() == b"blue:first;blue:0;blue:1;blue:2;"


async def test_proxy_follows_pod_readiness_and_round_robins_between_ready_pods(
    store: Store, services: ServiceController, make_backend, make_pod, free_cluster_ip, eventually
) -> None:
    one, two = await make_backend("one"), await make_backend("two")
    store.create("v1", "Pod", make_pod("one", one.host, {"app": "a"}, ports={"serve": one.port}))
    store.create("v1", "Pod", make_pod("two", two.host, {"app": "a"}, ports={"serve": two.port}, ready=False))
    ip = free_cluster_ip()
    store.create("v1", "Service", service_manifest("a", {"app": "a"}, ip))
    url = f"http://{ip}:{SERVICE_PORT}/"
    await eventually(
        lambda: (
            services.listen_address("default", "a", SERVICE_PORT) is not None
            and len(services.targets("default", "a", SERVICE_PORT)) == 1
        )
    )
    assert {await get_text(url) for _ in range(4)} == {"one /"}

    pod = store.get("v1", "Pod", "default", "two")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    store.update("v1", "Pod", pod, status=True)
    await eventually(lambda: len(services.targets("default", "a", SERVICE_PORT)) == 2)
    assert sorted([await get_text(url) for _ in range(4)]) == ["one /", "one /", "two /", "two /"]

    store.delete("v1", "Pod", "default", "one")
    await eventually(lambda: services.targets("default", "a", SERVICE_PORT) == [(two.host, two.port)])
    assert await get_text(url) == "two /"


async def test_service_without_ready_pods_refuses_and_deleted_service_stops_listening(
    store: Store, services: ServiceController, free_cluster_ip, eventually
) -> None:
    ip = free_cluster_ip()
    store.create("v1", "Service", service_manifest("empty", {"app": "none"}, ip))
    await eventually(lambda: services.listen_address("default", "empty", SERVICE_PORT) is not None)
    with pytest.raises(aiohttp.ClientError):
        await get_text(f"http://{ip}:{SERVICE_PORT}/")

    store.delete("v1", "Service", "default", "empty")
    await eventually(lambda: services.listen_address("default", "empty", SERVICE_PORT) is None)
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection(ip, SERVICE_PORT)


async def test_headless_service_gets_no_proxy(
    store: Store, services: ServiceController, free_cluster_ip, eventually
) -> None:
    headless = service_manifest("head-svc", {"app": "a"}, "None")
    store.create("v1", "Service", headless)
    marker = service_manifest("marker", {"app": "a"}, free_cluster_ip())
    store.create("v1", "Service", marker)
    # Services are reconciled together, so once the later one listens the headless one was seen too.
    await eventually(lambda: services.listen_address("default", "marker", SERVICE_PORT) is not None)
    assert services.listen_address("default", "head-svc", SERVICE_PORT) is None
