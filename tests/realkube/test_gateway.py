"""The sandbox's Gateway controller beside the real control plane: it reads Gateways and HTTPRoutes from the
real API server, sends each request straight to a ready endpoint of the backend Service (the EndpointSlices
the real endpointslice controller writes from the pods' readiness the node agent reports), splits requests by
the route's weights, follows a weight change, and writes the statuses Gateway API clients wait for.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import httpx
import pytest
import yaml

from sandbox.realkube.controlplane import ControlPlane
from tests.kubes import RealKube
from tests.realkube.answering_server import answering_server
from tests.realkube.waiting import eventually

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

NAMESPACE = "gateway-weights"
GROUP = "gateway.networking.k8s.io"
# Answers its VERSION on any path, over HTTP/1.1 keep-alive connections.
VERSION_SERVER = answering_server("VERSION")


@pytest.fixture(scope="module")
def plane(real_kube_of_simulated_ray: RealKube) -> ControlPlane:
    """The test process's real stack (tests/conftest.py), with a namespace for this module."""
    plane = real_kube_of_simulated_ray.plane
    plane.kubectl("create", "namespace", NAMESPACE)
    return plane


def apply(plane: ControlPlane, *objects: dict[str, Any]) -> None:
    plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(objects))


def get(plane: ControlPlane, kind: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(plane.kubectl("get", kind, name, "-n", NAMESPACE, "-o", "json"))
    return found


def version_pod_and_service(version: str) -> list[dict[str, Any]]:
    labels = {"app": "web", "version": version}
    container = {
        "name": "main",
        "image": "python:3.11",
        "command": ["python", "-c", VERSION_SERVER],
        "env": [{"name": "VERSION", "value": version}],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"web-{version}", "namespace": NAMESPACE, "labels": labels},
            "spec": {"containers": [container]},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"web-{version}", "namespace": NAMESPACE},
            "spec": {"selector": labels, "ports": [{"name": "serve", "port": 8000, "targetPort": "http"}]},
        },
    ]


def route(weights: dict[str, int]) -> dict[str, Any]:
    backends = [{"name": f"web-{v}", "port": 8000, "weight": w} for v, w in weights.items()]
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {
            "parentRefs": [{"name": "edge"}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": backends}],
        },
    }


GATEWAY = {
    "apiVersion": f"{GROUP}/v1",
    "kind": "Gateway",
    "metadata": {"name": "edge", "namespace": NAMESPACE},
    "spec": {"gatewayClassName": "sandbox", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
}


def condition(obj: dict[str, Any], kind: str) -> str:
    return next((c["status"] for c in obj.get("conditions") or [] if c["type"] == kind), "")


def answers(client: httpx.Client, url: str, count: int) -> Counter[str]:
    return Counter(client.get(url).text for _ in range(count))


def test_requests_follow_the_route_weights_to_ready_endpoints(plane: ControlPlane) -> None:
    apply(
        plane,
        *version_pod_and_service("v1"),
        *version_pod_and_service("v2"),
        GATEWAY,
        route({"v1": 1, "v2": 3}),
    )

    def programmed() -> str | None:
        status = get(plane, "gateway", "edge").get("status") or {}
        addresses = status.get("addresses") or []
        return addresses[0]["value"] if condition(status, "Programmed") == "True" and addresses else None

    address = eventually(programmed, "the Gateway programmed with an address")

    def route_resolved() -> bool:
        parents = (get(plane, "httproute", "web").get("status") or {}).get("parents") or []
        return len(parents) == 1 and all(
            condition(parents[0], k) == "True" for k in ("Accepted", "ResolvedRefs")
        )

    eventually(route_resolved, "the HTTPRoute accepted with its backendRefs resolved")
    url = f"http://{address}:80/"
    with httpx.Client(timeout=10.0) as client:  # keep-alive, as clients of a gateway are

        def both_serving() -> Counter[str] | None:
            counts = answers(client, url, 8)
            return counts if set(counts) == {"v1", "v2"} else None

        eventually(both_serving, "both versions' pods ready and answering through the Gateway")
        # Smooth weighted round robin: every window of 4 requests has one v1 and three v2.
        assert answers(client, url, 40) == Counter({"v1": 10, "v2": 30})

        apply(plane, route({"v1": 0, "v2": 1}))
        eventually(lambda: answers(client, url, 10) == Counter({"v2": 10}), "all traffic on v2")
        assert (
            condition(((get(plane, "httproute", "web")["status"]["parents"]) or [{}])[0], "Accepted")
            == "True"
        )


def route_parent(plane: ControlPlane, name: str) -> dict[str, Any]:
    parents = (get(plane, "httproute", name).get("status") or {}).get("parents") or []
    return parents[0] if parents else {}


def reason(obj: dict[str, Any], kind: str) -> tuple[str, str] | None:
    found = next((c for c in obj.get("conditions") or [] if c["type"] == kind), None)
    return (found["status"], found["reason"]) if found else None


def test_a_missing_backend_is_reported_until_it_exists_and_a_deleted_gateway_lets_go(
    plane: ControlPlane,
) -> None:
    gateway = {**GATEWAY, "metadata": {"name": "side", "namespace": NAMESPACE}}
    later = route({"v3": 1})
    later["metadata"]["name"] = "later"
    later["spec"]["parentRefs"] = [{"name": "side"}]
    apply(plane, gateway, later)
    eventually(
        lambda: reason(route_parent(plane, "later"), "ResolvedRefs") == ("False", "BackendNotFound"),
        "the route's missing Service reported",
    )
    address = eventually(
        lambda: ((get(plane, "gateway", "side").get("status") or {}).get("addresses") or [{}])[0].get(
            "value"
        ),
        "the Gateway's address",
    )

    apply(plane, *version_pod_and_service("v3"))
    eventually(
        lambda: reason(route_parent(plane, "later"), "ResolvedRefs") == ("True", "ResolvedRefs"),
        "the route's Service resolved once it exists",
    )
    with httpx.Client(timeout=10.0) as client:
        eventually(lambda: answers(client, f"http://{address}:80/", 4) == Counter({"v3": 4}), "v3 answering")

    plane.kubectl("delete", "gateway", "side", "-n", NAMESPACE)
    eventually(
        lambda: reason(route_parent(plane, "later"), "Accepted") == ("False", "NoMatchingParent"),
        "the route told its Gateway is gone",
    )
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://{address}:80/", timeout=5.0)
