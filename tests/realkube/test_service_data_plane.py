"""The node's Service data plane: the real kube-proxy (nftables mode) in the node's network namespace, beside
raypilot's node agent and the real control plane.

- a Service answers on its clusterIP from the host (where raypilot's worker, the tests and load generators
  run) and from pods, which resolve its name to the clusterIP;
- a kept-alive connection stays with the pod it reached when the Service's selector moves to another pod,
  while new connections reach the new pod: what a RayService's blue-green switch does to keep-alive clients.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import subprocess
from typing import Any

import pytest
import yaml

from sandbox.realkube.conditions import is_ready
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.node import NODE_NAME
from tests.kubes import RealKube
from tests.realkube.answering_server import answering_server
from tests.realkube.waiting import eventually

pytestmark = [
    pytest.mark.realkube,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0, reason="the node agent makes network namespaces: it needs root"),
]

# An HTTP/1.1 server that keeps connections alive and answers with its pod's name.
NAMED_SERVER = answering_server("POD")


@pytest.fixture(scope="module")
def plane(real_kube_of_simulated_ray: RealKube) -> ControlPlane:
    """The test process's real stack (tests/conftest.py)."""
    return real_kube_of_simulated_ray.plane


def apply(plane: ControlPlane, *objects: dict[str, Any]) -> None:
    plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(objects))


def get(plane: ControlPlane, kind: str, name: str) -> dict[str, Any]:
    found = plane.kubectl("get", kind, name, "-o", "json", check=False)
    return json.loads(found) if found else {}


def named_pod(name: str, color: str) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "python:3.11",
        "command": ["python", "-c", NAMED_SERVER],
        "env": [{"name": "POD", "value": name}],
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"color": color}},
        "spec": {"containers": [container]},
    }


def service(name: str, color: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"color": color}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def ready(plane: ControlPlane, pod: str) -> bool:
    return is_ready(get(plane, "pod", pod))


def phase(plane: ControlPlane, pod: str) -> str:
    return str(get(plane, "pod", pod).get("status", {}).get("phase", ""))


def answer(connection: http.client.HTTPConnection) -> str:
    connection.request("GET", "/")
    response = connection.getresponse()
    assert response.status == 200
    return response.read().decode()


def fresh_answer(address: str) -> str | None:
    """What a new connection to address:80 is answered (None while nothing answers there yet)."""
    connection = http.client.HTTPConnection(address, 80, timeout=5)
    try:
        return answer(connection)
    except OSError:
        return None
    finally:
        connection.close()


def test_a_service_answers_on_its_cluster_ip_from_the_host_and_from_pods(plane: ControlPlane) -> None:
    apply(plane, named_pod("solo", "solo"), service("solo", "solo"))
    eventually(lambda: ready(plane, "solo"), "solo Ready")
    cluster_ip = get(plane, "service", "solo")["spec"]["clusterIP"]
    assert ipaddress.ip_address(cluster_ip) in ipaddress.ip_network(plane.service_cidr)
    assert eventually(lambda: fresh_answer(cluster_ip), "solo's clusterIP answering the host") == "solo"

    # From a pod, by name: the name resolves to the clusterIP, whose endpoint is on the same bridge as the
    # caller (kube-proxy's masquerade brings the answer back through the node).
    fetch = (
        "import socket, urllib.request;"
        "print(socket.gethostbyname('solo.default.svc.cluster.local'));"
        "print(urllib.request.urlopen('http://solo.default.svc.cluster.local/').read().decode())"
    )
    client = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "caller", "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "python:3.11", "command": ["python", "-c", fetch]}],
        },
    }
    apply(plane, client)
    eventually(lambda: phase(plane, "caller") in {"Succeeded", "Failed"}, "caller done")
    assert phase(plane, "caller") == "Succeeded", plane.kubectl("logs", "caller")
    assert plane.kubectl("logs", "caller").split() == [cluster_ip, "solo"]


def test_a_kept_alive_connection_stays_with_its_pod_when_the_service_moves(plane: ControlPlane) -> None:
    apply(plane, named_pod("blue", "blue"), named_pod("green", "green"), service("web", "blue"))
    eventually(lambda: ready(plane, "blue") and ready(plane, "green"), "blue and green Ready")
    cluster_ip = get(plane, "service", "web")["spec"]["clusterIP"]
    eventually(lambda: fresh_answer(cluster_ip) == "blue", "web answering from blue")
    kept = http.client.HTTPConnection(cluster_ip, 80, timeout=5)
    try:
        assert answer(kept) == "blue"

        apply(plane, service("web", "green"))
        eventually(lambda: fresh_answer(cluster_ip) == "green", "new connections reaching green")
        # The connection's translation outlives the endpoint's removal: it still reaches blue.
        assert [answer(kept) for _ in range(3)] == ["blue"] * 3
    finally:
        kept.close()


def test_kube_proxys_rules_are_in_the_nodes_namespace_not_the_hosts(plane: ControlPlane) -> None:
    """Two nodes on one machine (two test processes' stacks) would otherwise rewrite one table."""
    node = get(plane, "node", NODE_NAME)
    internal = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    netns = f"rp{internal.split('.')[2]}n"  # the node's namespace, by its index (10.201.<index>.1)
    listed = subprocess.run(
        ["ip", "netns", "exec", netns, "nft", "list", "table", "ip", "kube-proxy"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert "services" in listed.stdout
    on_host = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True)
    assert "kube-proxy" not in on_host.stdout
