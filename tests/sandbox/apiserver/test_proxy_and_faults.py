"""Service and Pod proxy subresources, bad input and fault injection, over plain HTTP and the client."""

from __future__ import annotations

import json
import socket
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from aiohttp import web
from kubernetes import client
from kubernetes.client.exceptions import ApiException

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.sandbox.apiserver.conftest import ThreadedApiServer

ECHO_SERVICE_IP = "127.0.1.250"
ECHO_POD_IP = "127.0.3.250"


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


async def _echo(request: web.Request) -> web.Response:
    body = await request.read()
    return web.json_response(
        {
            "method": request.method,
            "path": request.path,
            "query": dict(request.query),
            "body": body.decode(),
            "authorization": request.headers.get("Authorization"),
            "rayAuthorization": request.headers.get("X-Ray-Authorization"),
        }
    )


@pytest.fixture
def echo(apiserver: ThreadedApiServer) -> Iterator[dict[str, int]]:
    """An HTTP echo server on a clusterIP and on a pod IP, standing in for the Service controller's proxy and
    for a Ray head's dashboard."""
    ports = {ECHO_SERVICE_IP: _free_port(ECHO_SERVICE_IP), ECHO_POD_IP: _free_port(ECHO_POD_IP)}

    async def start() -> web.AppRunner:
        app = web.Application(client_max_size=4 << 20)
        app.router.add_route("*", "/{tail:.*}", _echo)
        runner = web.AppRunner(app)
        await runner.setup()
        for host, port in ports.items():
            await web.TCPSite(runner, host, port).start()
        return runner

    def release_service_ip() -> None:
        for svc in apiserver.store.list("v1", "Service"):
            if svc["spec"].get("clusterIP") == ECHO_SERVICE_IP:
                meta = svc["metadata"]
                apiserver.store.delete("v1", "Service", meta["namespace"], meta["name"])

    runner = apiserver.run(start())
    yield ports
    apiserver.run(runner.cleanup())
    apiserver.call(release_service_ip)  # the next test's Service takes the same clusterIP


def _service(
    name: str, port: int, cluster_ip: str | None, selector: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"name": "dashboard", "port": port, "targetPort": "dashboard"}]}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    if selector:
        spec["selector"] = selector
    return {"metadata": {"name": name}, "spec": spec}


def _ready_pod(api: client.ApiClient, namespace: str, port: int) -> None:
    core = client.CoreV1Api(api)
    pod = {
        "metadata": {"name": "head", "labels": {"ray.io/node-type": "head"}},
        "spec": {
            "containers": [
                {"name": "ray-head", "image": "ray", "ports": [{"name": "dashboard", "containerPort": port}]}
            ]
        },
    }
    core.create_namespaced_pod(namespace, pod)
    status = {"phase": "Running", "podIP": ECHO_POD_IP, "conditions": [{"type": "Ready", "status": "True"}]}
    core.patch_namespaced_pod_status("head", namespace, {"status": status})


def test_service_proxy_forwards_method_query_body_and_the_ray_token_but_not_kubernetes_credentials(
    api_client: client.ApiClient, apiserver: ThreadedApiServer, namespace: str, echo: dict[str, int]
) -> None:
    client.CoreV1Api(api_client).create_namespaced_service(
        namespace, _service("dash", echo[ECHO_SERVICE_IP], ECHO_SERVICE_IP)
    )
    for port in ("dashboard", str(echo[ECHO_SERVICE_IP])):
        response = httpx.post(
            f"{apiserver.url}/api/v1/namespaces/{namespace}/services/dash:{port}/proxy/api/jobs/",
            params={"a": "1"},
            content=b'{"entrypoint": "echo"}',
            headers={"Authorization": "Bearer t", "X-Ray-Authorization": "Bearer r"},
        )
        assert response.status_code == 200
        assert response.json() == {
            "method": "POST",
            "path": "/api/jobs/",
            "query": {"a": "1"},
            "body": '{"entrypoint": "echo"}',
            "authorization": None,  # the API server's own credentials stay with it
            "rayAuthorization": "Bearer r",
        }


def test_service_proxy_forwards_a_large_body_whole(
    api_client: client.ApiClient, apiserver: ThreadedApiServer, namespace: str, echo: dict[str, int]
) -> None:
    client.CoreV1Api(api_client).create_namespaced_service(
        namespace, _service("big", echo[ECHO_SERVICE_IP], ECHO_SERVICE_IP)
    )
    payload = "x" * (2 << 20)
    response = httpx.put(
        f"{apiserver.url}/api/v1/namespaces/{namespace}/services/big:dashboard/proxy/api/serve/applications/",
        content=payload.encode(),
        timeout=30,
    )
    assert response.json()["body"] == payload


def test_headless_service_proxy_reaches_a_ready_pod(
    api_client: client.ApiClient, namespace: str, echo: dict[str, int]
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_service(
        namespace, _service("head-svc", 8265, "None", {"ray.io/node-type": "head"})
    )
    _ready_pod(api_client, namespace, echo[ECHO_POD_IP])
    answer = core.connect_get_namespaced_service_proxy_with_path(
        "head-svc:dashboard", namespace, "api/version", _preload_content=False
    )
    assert json.loads(answer.data)["path"] == "/api/version"


def test_pod_proxy_and_unreachable_target(
    api_client: client.ApiClient, apiserver: ThreadedApiServer, namespace: str, echo: dict[str, int]
) -> None:
    _ready_pod(api_client, namespace, echo[ECHO_POD_IP])
    ok = httpx.get(f"{apiserver.url}/api/v1/namespaces/{namespace}/pods/head:{echo[ECHO_POD_IP]}/proxy/x")
    assert ok.json()["path"] == "/x"
    closed = _free_port(ECHO_POD_IP)
    refused = httpx.get(f"{apiserver.url}/api/v1/namespaces/{namespace}/pods/head:{closed}/proxy/x")
    assert refused.status_code == 503
    assert refused.json()["kind"] == "Status"


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "configmaps", b"{not json", 400),
        ("POST", "configmaps", b'{"kind": "Secret", "metadata": {"name": "x"}}', 400),
        ("POST", "configmaps", b'{"metadata": {"name": "Bad_Name"}}', 422),
        ("POST", "widgets", b'{"metadata": {"name": "x"}}', 404),
        ("PUT", "configmaps/x", b'{"metadata": {"name": "y"}}', 400),
        (
            "POST",
            "configmaps",
            b'{"metadata": {"name": "big"}, "data": {"k": "' + b"x" * (3 << 20) + b'"}}',
            413,
        ),
    ],
    ids=["malformed", "wrong-kind", "invalid-name", "unknown-resource", "name-mismatch", "too-large"],
)
def test_bad_input_is_rejected_and_nothing_stored(
    api_client: client.ApiClient,
    apiserver: ThreadedApiServer,
    namespace: str,
    method: str,
    path: str,
    body: bytes,
    status: int,
) -> None:
    response = httpx.request(
        method,
        f"{apiserver.url}/api/v1/namespaces/{namespace}/{path}",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == status
    assert response.json()["kind"] == "Status"
    assert response.json()["code"] == status
    assert client.CoreV1Api(api_client).list_namespaced_config_map(namespace).items == []


def test_fault_429_over_http_with_retry_after(
    apiserver: ThreadedApiServer, namespace: str, faults: Any
) -> None:
    rule = {"verbs": ["create"], "resources": ["configmaps"], "status": 429, "retryAfterSeconds": 2}
    assert httpx.post(f"{apiserver.url}/sandbox/faults", json={"rules": [rule]}).status_code == 200
    url = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    throttled = httpx.post(url, json={"metadata": {"name": "a"}})
    assert throttled.status_code == 429
    assert throttled.headers["Retry-After"] == "2"
    assert throttled.json()["reason"] == "TooManyRequests"
    assert httpx.get(url).status_code == 200  # other verbs are untouched
    assert httpx.get(f"{apiserver.url}/sandbox/faults").json()["rules"][0]["injected"] == 1
    httpx.delete(f"{apiserver.url}/sandbox/faults")
    assert httpx.post(url, json={"metadata": {"name": "a"}}).status_code == 201


def test_fault_conflict_reaches_the_client_as_conflict(
    api_client: client.ApiClient, apiserver: ThreadedApiServer, namespace: str, faults: Any
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    httpx.post(
        f"{apiserver.url}/sandbox/faults",
        json=[{"verb": "patch", "resource": "configmaps", "status": 409, "times": 1}],
    )
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("c", namespace, {"data": {"a": "b"}})
    assert err.value.status == 409
    assert json.loads(err.value.body)["reason"] == "Conflict"
    assert core.patch_namespaced_config_map("c", namespace, {"data": {"a": "b"}}).data == {"a": "b"}


def test_fault_error_rate_is_seeded_and_latency_is_added(
    apiserver: ThreadedApiServer, namespace: str, faults: Any
) -> None:
    url = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    rules = {
        "seed": 42,
        "rules": [{"verb": "list", "resource": "configmaps", "status": 500, "errorRate": 0.5}],
    }

    def pattern() -> list[int]:
        with httpx.Client() as http:
            http.post(f"{apiserver.url}/sandbox/faults", json=rules)
            return [http.get(url).status_code for _ in range(40)]

    first = pattern()
    assert 10 <= first.count(500) <= 30
    assert pattern() == first
    httpx.post(f"{apiserver.url}/sandbox/faults", json={"verb": "list", "latencyMs": 200})
    started = time.monotonic()
    assert httpx.get(url).status_code == 200
    assert time.monotonic() - started >= 0.2
