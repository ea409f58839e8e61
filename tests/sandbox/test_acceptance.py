"""Issue 3 acceptance: a real Ray Serve app on sandbox RayClusters answers through its Service and through a
Gateway whose HTTPRoute splits 80/20 between two clusters (APP_VERSION v1 and v2), measured over 2,000
requests, with no failed request while the weights change under load."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes
import pytest

from sandbox.testing import SandboxThread, poll_until, raycluster_manifest, ready_raycluster

pytestmark = pytest.mark.ray

NS = "default"
VERSIONS = ("v1", "v2")
GATEWAY = "accept-gateway"
ROUTE = "accept-route"
SERVE_CONFIG = {
    "applications": [
        {
            "name": "versioned",
            "route_prefix": "/",
            "import_path": "sandbox.apps.versioned:app",
            "deployments": [{"name": "Versioned", "num_replicas": 1, "ray_actor_options": {"num_cpus": 0.1}}],
        }
    ]
}
REQUESTS = 2000
CONCURRENCY = 16


def cluster_name(version: str) -> str:
    return f"accept-{version}"


def http_json(url: str, method: str = "GET", body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
    return json.loads(text) if text else None


@dataclass
class Stack:
    sandbox: SandboxThread
    custom: Any
    core: Any
    service_ips: dict[str, str] = field(default_factory=dict)
    gateway_url: str = ""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with SandboxThread(tmp_path_factory.mktemp("acceptance"), "real") as cluster:
        client = cluster.api_client()
        yield Stack(cluster, kubernetes.client.CustomObjectsApi(client), kubernetes.client.CoreV1Api(client))


def deploy_versioned_clusters(stack: Stack) -> None:
    for version in VERSIONS:
        manifest = raycluster_manifest(
            cluster_name(version),
            workers=0,
            env={"APP_VERSION": version},
            head_labels={"ray.io/serve": "true"},
        )
        stack.custom.create_namespaced_custom_object("ray.io", "v1", NS, "rayclusters", manifest)
    for version in VERSIONS:
        cluster = poll_until(
            lambda v=version: ready_raycluster(stack.custom, NS, cluster_name(v)), within=180, interval=0.5
        )
        dashboard = f"http://{cluster['status']['head']['serviceIP']}:8265"
        http_json(f"{dashboard}/api/serve/applications/", "PUT", SERVE_CONFIG)
        stack.service_ips[version] = dashboard

    def app_running(dashboard: str) -> bool:
        details = http_json(f"{dashboard}/api/serve/applications/?api_type=declarative")
        return details["applications"].get("versioned", {}).get("status") == "RUNNING"

    for dashboard in list(stack.service_ips.values()):
        poll_until(lambda d=dashboard: app_running(d), within=180, interval=0.5, what="Serve app RUNNING")
    for version in VERSIONS:
        service = {
            "metadata": {"name": f"{cluster_name(version)}-serve-svc"},
            "spec": {
                "selector": {"ray.io/cluster": cluster_name(version), "ray.io/serve": "true"},
                "ports": [{"name": "serve", "port": 8000, "targetPort": 8000}],
            },
        }
        created = stack.core.create_namespaced_service(NS, service)
        stack.service_ips[version] = created.spec.cluster_ip


def route(weights: tuple[int, int]) -> dict[str, Any]:
    backends = [
        {"name": f"{cluster_name(version)}-serve-svc", "port": 8000, "weight": weight}
        for version, weight in zip(VERSIONS, weights, strict=True)
    ]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": ROUTE, "namespace": NS},
        "spec": {
            "parentRefs": [{"name": GATEWAY}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": backends}],
        },
    }


def condition_true(conditions: list[dict[str, Any]] | None, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions or [])


def create_gateway(stack: Stack, weights: tuple[int, int]) -> None:
    group = ("gateway.networking.k8s.io", "v1")
    gateway_class = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": "sandbox"},
        "spec": {"controllerName": "sandbox.raypilot.io/gateway-controller"},
    }
    stack.custom.create_cluster_custom_object(*group, "gatewayclasses", gateway_class)
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY, "namespace": NS},
        "spec": {
            "gatewayClassName": "sandbox",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        },
    }
    stack.custom.create_namespaced_custom_object(*group, NS, "gateways", gateway)
    stack.custom.create_namespaced_custom_object(*group, NS, "httproutes", route(weights))

    def programmed() -> dict[str, Any] | None:
        status = (
            stack.custom.get_namespaced_custom_object(*group, NS, "gateways", GATEWAY).get("status") or {}
        )
        ok = condition_true(status.get("conditions"), "Programmed") and status.get("addresses")
        return status if ok else None

    def route_resolved() -> bool:
        status = (
            stack.custom.get_namespaced_custom_object(*group, NS, "httproutes", ROUTE).get("status") or {}
        )
        parents = status.get("parents") or []
        return any(
            condition_true(p.get("conditions"), "Accepted")
            and condition_true(p.get("conditions"), "ResolvedRefs")
            for p in parents
        )

    status = poll_until(programmed, within=30, what="Gateway programmed")
    poll_until(route_resolved, within=30, what="HTTPRoute accepted with resolved refs")
    address = status["addresses"][0]["value"]
    listening = stack.sandbox.sandbox.gateways.listen_address(NS, GATEWAY, 80) or (address, 80)
    stack.gateway_url = f"http://{listening[0]}:{listening[1]}"


def set_weights(stack: Stack, weights: tuple[int, int]) -> None:
    patch = {"spec": route(weights)["spec"]}
    stack.custom.patch_namespaced_custom_object(
        "gateway.networking.k8s.io", "v1", NS, "httproutes", ROUTE, patch
    )


async def fire(url: str, count: int) -> tuple[Counter[str], int]:
    versions: Counter[str] = Counter()
    failures = 0
    remaining = iter(range(count))
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:

        async def worker() -> None:
            nonlocal failures
            for _ in remaining:
                try:
                    async with session.get(url) as response:
                        if response.status != 200:
                            failures += 1
                            continue
                        versions[(await response.json())["version"]] += 1
                except aiohttp.ClientError:
                    failures += 1

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return versions, failures


@pytest.fixture(scope="module")
def deployed(stack: Stack) -> Stack:
    deploy_versioned_clusters(stack)
    create_gateway(stack, (80, 20))
    return stack


def test_serve_app_answers_through_its_service(deployed: Stack) -> None:
    for version in VERSIONS:
        answer = poll_until(
            lambda v=version: _try_json(f"http://{deployed.service_ips[v]}:8000/hello"),
            within=30,
            what=f"{version} through its Service",
        )
        assert answer["version"] == version
        assert answer["replica"]


def _try_json(url: str) -> Any:
    try:
        return http_json(url)
    except OSError:
        return None


def test_gateway_splits_80_20_over_2000_requests(deployed: Stack) -> None:
    versions, failures = asyncio.run(fire(deployed.gateway_url + "/", REQUESTS))
    share = versions["v1"] / REQUESTS
    report = f"v1 share {share:.3f} over {REQUESTS} requests: {dict(versions)}, {failures} failures"
    Path(deployed.sandbox.sandbox.workdir / "acceptance-split.txt").write_text(report + "\n")
    assert failures == 0, report
    assert sum(versions.values()) == REQUESTS
    assert abs(share - 0.80) <= 0.05, report


def test_no_failed_request_while_weights_change(deployed: Stack) -> None:
    plan = [(50, 50), (0, 100), (100, 0), (80, 20)]

    async def load_while_changing() -> tuple[Counter[str], int, list[float]]:
        stop = asyncio.Event()
        totals: Counter[str] = Counter()
        failures = 0
        lags: list[float] = []

        async def load() -> None:
            nonlocal failures
            while not stop.is_set():
                versions, failed = await fire(deployed.gateway_url + "/", 64)
                totals.update(versions)
                failures += failed

        loader = asyncio.create_task(load())
        for weights in plan:
            await asyncio.to_thread(set_weights, deployed, weights)
            changed = time.monotonic()
            if 0 in weights:  # a one-sided split is observable: wait until only the chosen version answers
                only = VERSIONS[weights.index(100)]
                async with aiohttp.ClientSession() as session:
                    while True:
                        async with session.get(deployed.gateway_url + "/") as response:
                            if (await response.json())["version"] == only:
                                break
                lags.append(time.monotonic() - changed)
            await asyncio.sleep(1.0)
        stop.set()
        await loader
        return totals, failures, lags

    totals, failures, lags = asyncio.run(load_while_changing())
    report = f"{sum(totals.values())} requests {dict(totals)}, {failures} failures, switch lags {lags}"
    Path(deployed.sandbox.sandbox.workdir / "acceptance-weights.txt").write_text(report + "\n")
    assert failures == 0, report
    assert sum(totals.values()) > 200, report
    assert set(totals) == set(VERSIONS), report
