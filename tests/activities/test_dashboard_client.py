"""What goes over the wire to the Ray dashboard (headers, addresses, timeouts), and the pure trimming of
dashboard answers. The network is an httpx.MockTransport that records every request."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities.dashboard import DashboardActivities, job_info_answer, shorten_middle, trim_serve_details
from activities.dashboard_client import proxied_serve_health
from activities.registry import ActivityDependencies, dashboard_access_from_env
from models.raycluster import RayClusterSpec
from wire.dashboard import (
    DashboardTarget,
    HeadServeHealth,
    JobInfoAnswer,
    RayJobKey,
    RayTokenSecret,
    ray_token_secret,
)

RAY_TOKEN = "ray-token-abc"
KUBE_TOKEN = "kube-token-xyz"
BROWSER_HEADERS = ("origin", "referer", "sec-fetch-mode", "sec-fetch-site", "sec-fetch-dest")


class RecordingNetwork:
    """Answers the token Secret and every dashboard call; keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.path == "/api/v1/namespaces/ns/secrets/rc":
            encoded = base64.b64encode(RAY_TOKEN.encode()).decode()
            return httpx.Response(200, json={"kind": "Secret", "data": {"auth_token": encoded}})
        if request.url.path.endswith("/-/healthz"):
            return httpx.Response(200, text="success")
        return httpx.Response(200, json={"status": "RUNNING", "message": "Job is currently running."})

    def dashboard_requests(self) -> list[httpx.Request]:
        return [r for r in self.requests if "/secrets/" not in r.url.path]


def dependencies(access: str, network: RecordingNetwork) -> ActivityDependencies:
    configuration = client.Configuration()
    configuration.host = "http://apiserver.test:6443"
    configuration.api_key = {"BearerToken": KUBE_TOKEN}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    transport = httpx.MockTransport(network)
    return ActivityDependencies(
        env={"RAYPILOT_DASHBOARD_ACCESS": access},
        http=httpx.AsyncClient(transport=transport, headers={"User-Agent": "raypilot"}),
        kube_configuration=configuration,
        apiserver_transport=transport,
    )


TARGET = DashboardTarget(namespace="ns", head_service="rc-head-svc", auth_secret="rc")


async def test_direct_access_sends_the_ray_token_as_both_headers() -> None:
    network = RecordingNetwork()
    answer = await ActivityEnvironment().run(
        DashboardActivities(dependencies("direct", network)).get_job_info, RayJobKey(TARGET, "job-1")
    )
    assert answer == JobInfoAnswer("found", status="RUNNING", message="Job is currently running.")
    (request,) = network.dashboard_requests()
    assert str(request.url) == "http://rc-head-svc.ns.svc.cluster.local:8265/api/jobs/job-1"
    assert request.headers["Authorization"] == f"Bearer {RAY_TOKEN}"
    assert request.headers["X-Ray-Authorization"] == f"Bearer {RAY_TOKEN}"
    assert request.extensions["timeout"]["read"] == 2.0
    assert request.headers["User-Agent"] == "raypilot"
    assert not any(name in request.headers for name in BROWSER_HEADERS)


async def test_proxy_access_keeps_the_api_server_credentials_apart() -> None:
    network = RecordingNetwork()
    await ActivityEnvironment().run(
        DashboardActivities(dependencies("proxy", network)).get_job_info, RayJobKey(TARGET, "job-1")
    )
    secret_read, dashboard_call = network.requests
    assert secret_read.headers["Authorization"] == f"Bearer {KUBE_TOKEN}"
    assert str(dashboard_call.url) == (
        "http://apiserver.test:6443/api/v1/namespaces/ns/services/rc-head-svc:dashboard/proxy/api/jobs/job-1"
    )
    assert dashboard_call.headers["Authorization"] == f"Bearer {KUBE_TOKEN}"
    assert dashboard_call.headers["X-Ray-Authorization"] == f"Bearer {RAY_TOKEN}"
    assert dashboard_call.extensions["timeout"]["read"] == 10.0
    assert not any(name in dashboard_call.headers for name in BROWSER_HEADERS)


async def test_no_auth_secret_means_no_token_and_no_secret_read() -> None:
    network = RecordingNetwork()
    target = DashboardTarget(namespace="ns", head_service="rc-head-svc", dashboard_url="10.1.2.3:8265")
    await ActivityEnvironment().run(
        DashboardActivities(dependencies("direct", network)).get_job_info, RayJobKey(target, "j")
    )
    (request,) = network.requests
    assert str(request.url) == "http://10.1.2.3:8265/api/jobs/j"
    assert "Authorization" not in request.headers
    assert "X-Ray-Authorization" not in request.headers


@pytest.mark.parametrize(
    ("access", "expected_url"),
    [
        ("direct", "http://10.0.0.7:8000/-/healthz"),
        ("proxy", "http://apiserver.test:6443/api/v1/namespaces/ns/pods/rc-head-x:8000/proxy/-/healthz"),
    ],
)
async def test_head_health_address(access: str, expected_url: str) -> None:
    network = RecordingNetwork()
    healthy = await ActivityEnvironment().run(
        DashboardActivities(dependencies(access, network)).check_serve_health,
        HeadServeHealth("ns", "rc-head-x", "10.0.0.7"),
    )
    assert healthy is True
    assert [str(r.url) for r in network.requests] == [expected_url]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "proxy"),
        ({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "direct"),
        ({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "RAYPILOT_DASHBOARD_ACCESS": "proxy"}, "proxy"),
        ({"RAYPILOT_DASHBOARD_ACCESS": " Direct "}, "direct"),
    ],
)
def test_dashboard_access_setting(env: dict[str, str], expected: str) -> None:
    assert dashboard_access_from_env(env) == expected


def test_dashboard_access_rejects_other_values() -> None:
    with pytest.raises(ValueError, match="RAYPILOT_DASHBOARD_ACCESS"):
        dashboard_access_from_env({"RAYPILOT_DASHBOARD_ACCESS": "sideways"})


TOKEN_FROM_SECRET = {
    "name": "RAY_AUTH_TOKEN",
    "valueFrom": {"secretKeyRef": {"name": "ray-token", "key": "t"}},
}


@pytest.mark.parametrize(
    ("auth_options", "head_env", "expected"),
    [
        (None, [], None),
        ({"mode": "disabled"}, [], None),
        ({"mode": "token"}, [], RayTokenSecret("rc")),
        ({"mode": "token", "secretName": "my-token"}, [], RayTokenSecret("my-token")),
        # Token auth set up in the Ray container, as under a KubeRay without authOptions (1.5 and older).
        (
            None,
            [{"name": "RAY_AUTH_MODE", "value": "token"}, TOKEN_FROM_SECRET],
            RayTokenSecret("ray-token", "t"),
        ),
        (
            None,
            [{"name": "RAY_AUTH_MODE", "value": "TOKEN"}, TOKEN_FROM_SECRET],
            RayTokenSecret("ray-token", "t"),
        ),
        (None, [TOKEN_FROM_SECRET], None),  # the token is there, but Ray does not ask for it
        (None, [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": "x"}], None),
        (
            {"mode": "token"},
            [{"name": "RAY_AUTH_MODE", "value": "token"}, TOKEN_FROM_SECRET],
            RayTokenSecret("rc"),
        ),
    ],
)
def test_the_ray_token_is_in_the_secret_the_cluster_names(
    auth_options: dict[str, Any] | None, head_env: list[dict[str, Any]], expected: RayTokenSecret | None
) -> None:
    head = {"name": "ray-head", "env": head_env}
    spec: dict[str, Any] = {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}}
    }
    if auth_options is not None:
        spec["authOptions"] = auth_options
    assert ray_token_secret("rc", RayClusterSpec.model_validate(spec)) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"status": "FAILED", "message": "boom", "start_time": 1000, "end_time": 2000, "error_type": "X"},
            JobInfoAnswer("found", "FAILED", "boom", 1000, 2000, "X"),
        ),
        ({"status": "PENDING", "start_time": None, "end_time": None}, JobInfoAnswer("found", "PENDING")),
        (
            {"detail": "not a job"},
            JobInfoAnswer("unavailable", error="GetJobInfo fail: {'detail': 'not a job'}"),
        ),
        ([], JobInfoAnswer("unavailable", error="GetJobInfo fail: []")),
    ],
)
def test_job_info_answer(body: Any, expected: JobInfoAnswer) -> None:
    assert job_info_answer(body) == expected


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [("short", 10, "short"), ("a" * 10 + "b" * 10, 15, "aaaaa\n...\nbbbbb")],
)
def test_shorten_middle(text: str, limit: int, expected: str) -> None:
    assert shorten_middle(text, limit) == expected


def test_trim_serve_details_keeps_what_decisions_read() -> None:
    body = {
        "controller_info": {"node_id": "n"},
        "proxies": {"n": {"status": "HEALTHY"}},
        "applications": {
            "app1": {
                "status": "RUNNING",
                "message": "",
                "route_prefix": "/",
                "deployed_app_config": {"import_path": "a:b", "runtime_env": {"env_vars": {"SECRET": "x"}}},
                "deployments": {
                    "D": {
                        "status": "HEALTHY",
                        "message": "",
                        "target_num_replicas": 1,
                        "deployment_config": {"num_replicas": 1},
                        "replicas": [
                            {
                                "replica_id": "r1",
                                "state": "RUNNING",
                                "pid": 7,
                                "node_ip": "10.0.0.1",
                                "rank": 0,
                            }
                        ],
                    }
                },
            }
        },
        "target_capacity": 50.0,
    }
    assert trim_serve_details(body) == {
        "applications": {
            "app1": {
                "status": "RUNNING",
                "message": "",
                "route_prefix": "/",
                "deployments": {
                    "D": {
                        "status": "HEALTHY",
                        "message": "",
                        "target_num_replicas": 1,
                        "num_replicas": 1,
                        "replicas": [{"replica_id": "r1", "state": "RUNNING", "rank": 0}],
                    }
                },
            }
        },
        "target_capacity": 50.0,
    }


def _status(code: int, reason: str, message: str) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
    )


@pytest.mark.parametrize(
    ("status_code", "body", "healthy"),
    [
        (200, "success", True),
        # The Serve proxy's own answers: unhealthy, as KubeRay's direct check sees them.
        (503, "No replica of application 'app' is running.", False),
        (500, '{"error": "boom"}', False),
        # The Pod behind the API server's proxy does not answer: unhealthy.
        (
            503,
            _status(503, "ServiceUnavailable", "error trying to reach pod: dial tcp: connection refused"),
            False,
        ),
        # The API server failed the request itself: nothing is known about the Serve proxy.
        (500, _status(500, "InternalError", "an error on the server"), None),
        (
            503,
            _status(503, "ServiceUnavailable", "the server is currently unable to handle the request"),
            None,
        ),
        (429, _status(429, "TooManyRequests", "too many requests"), None),
        (429, "", None),
    ],
)
def test_a_proxied_health_check_tells_the_api_servers_failure_from_an_unhealthy_proxy(
    status_code: int, body: str, healthy: bool | None
) -> None:
    assert proxied_serve_health(status_code, body) is healthy
