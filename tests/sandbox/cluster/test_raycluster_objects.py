"""Pure parts of the RayCluster controller: desired replicas, port mapping, pods/Service shapes, status."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.controllers.raycluster_pods import (
    desired_worker_pods,
    head_pod,
    head_service,
    runtime_port_key,
    worker_pod,
)
from sandbox.controllers.raycluster_status import cluster_status


@pytest.mark.parametrize(
    ("group", "cluster_suspended", "expected"),
    [
        ({"minReplicas": 1, "maxReplicas": 5}, False, 1),  # replicas nil -> min
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, False, 3),  # in range
        ({"replicas": 9, "minReplicas": 1, "maxReplicas": 5}, False, 5),  # above max -> max
        ({"replicas": 0, "minReplicas": 2, "maxReplicas": 5}, False, 2),  # below min -> min
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5, "suspend": True}, False, 0),
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5, "numOfHosts": 4}, False, 12),
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, True, 0),
        ({"replicas": 2}, False, 2),  # max defaults to int32 max
    ],
)
def test_desired_worker_pods(group: dict[str, Any], cluster_suspended: bool, expected: int) -> None:
    assert desired_worker_pods(group, cluster_suspended) == expected


@pytest.mark.parametrize(
    ("name", "number", "expected"),
    [
        ("dashboard", 8265, "dashboard"),
        ("serve", 8000, "serve"),
        ("serve-http", 9000, "serve"),
        ("client", 10001, "client"),
        ("gcs-server", 6379, "gcs-server"),
        ("gcs", 6380, "gcs-server"),
        (None, 8265, "dashboard"),
        ("metrics", 8080, "metrics"),  # the metrics export port (Serve proxies' gauges for drained deletion)
        ("prometheus", 9090, None),
        ("custom", 8000, "serve"),
    ],
)
def test_runtime_port_key(name: str | None, number: int, expected: str | None) -> None:
    assert runtime_port_key(name, number) == expected


def cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "uid": "uid-1", "generation": 3},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "metadata": {"labels": {"ray.io/serve": "true", "team": "a"}},
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0"}]},
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 2,
                    "minReplicas": 0,
                    "maxReplicas": 4,
                    "template": {"spec": {"containers": [{"name": "ray-worker"}]}},
                }
            ],
            **spec,
        },
    }


def test_head_pod_and_worker_pod_follow_kuberay_conventions() -> None:
    head = head_pod(cluster(), "abcde")
    assert head["metadata"]["name"] == "rc-head-abcde"
    labels = head["metadata"]["labels"]
    assert labels["ray.io/cluster"] == "rc"
    assert labels["ray.io/node-type"] == "head"
    assert labels["ray.io/identifier"] == "rc-head"
    assert labels["ray.io/group"] == "headgroup"
    assert labels["app.kubernetes.io/created-by"] == "kuberay-operator"
    assert labels["ray.io/serve"] == "true"  # the template's own labels are kept
    assert head["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    worker = worker_pod(cluster(), cluster()["spec"]["workerGroupSpecs"][0], "fghij")
    assert worker["metadata"]["name"] == "rc-small-worker-fghij"
    assert worker["metadata"]["labels"]["ray.io/group"] == "small"
    assert worker["metadata"]["labels"]["ray.io/node-type"] == "worker"


def test_token_auth_injects_env_from_the_cluster_secret() -> None:
    head = head_pod(cluster(authOptions={"mode": "token"}), "abcde")
    env = {var["name"]: var for var in head["spec"]["containers"][0]["env"]}
    assert env["RAY_AUTH_MODE"]["value"] == "token"
    assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "rc", "key": "auth_token"}


def test_head_service_default_ports_and_declared_ports() -> None:
    service = head_service(cluster())
    assert service["metadata"]["name"] == "rc-head-svc"
    assert service["spec"]["selector"] == {"ray.io/cluster": "rc", "ray.io/node-type": "head"}
    assert {(p["name"], p["port"]) for p in service["spec"]["ports"]} == {
        ("gcs-server", 6379),
        ("dashboard", 8265),
        ("client", 10001),
        ("serve", 8000),
    }
    declared = cluster()
    declared["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "dashboard", "containerPort": 8265},
        {"name": "serve", "containerPort": 8000},
    ]
    assert [(p["name"], p["targetPort"]) for p in head_service(declared)["spec"]["ports"]] == [
        ("dashboard", 8265),
        ("serve", 8000),
    ]
    assert "clusterIP" not in service["spec"]  # allocated by the API server


def pod(node_type: str, phase: str = "Running", ready: bool = True, name: str = "p") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"ray.io/node-type": node_type}},
        "status": {
            "phase": phase,
            "podIP": "127.0.3.5",
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "reason": "ContainersNotReady"}
            ],
        },
    }


SERVICE = {
    "metadata": {"name": "rc-head-svc"},
    "spec": {
        "clusterIP": "127.0.1.4",
        "ports": [{"name": "dashboard", "port": 8265}, {"name": "serve", "port": 8000}],
    },
}


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_status_ready_when_head_and_all_workers_run() -> None:
    pods = [pod("head", name="h"), pod("worker", name="w1"), pod("worker", name="w2")]
    status = cluster_status(cluster(), pods, SERVICE)
    assert status["state"] == "ready"
    assert conditions(status)["HeadPodReady"] == ("True", "HeadPodRunningAndReady")
    assert conditions(status)["RayClusterProvisioned"] == ("True", "AllPodRunningAndReadyFirstTime")
    assert status["head"] == {
        "podName": "h",
        "podIP": "127.0.3.5",
        "serviceName": "rc-head-svc",
        "serviceIP": "127.0.1.4",
    }
    assert status["endpoints"] == {"dashboard": "8265", "serve": "8000"}
    assert (
        status["desiredWorkerReplicas"],
        status["readyWorkerReplicas"],
        status["availableWorkerReplicas"],
    ) == (2, 2, 2)
    assert (status["minWorkerReplicas"], status["maxWorkerReplicas"]) == (0, 4)
    assert status["observedGeneration"] == 3


@pytest.mark.parametrize(
    ("pods", "head_ready", "provisioned"),
    [
        ([], ("False", "HeadPodNotFound"), "False"),
        ([pod("head", ready=False)], ("False", "ContainersNotReady"), "False"),
        ([pod("head"), pod("worker")], ("True", "HeadPodRunningAndReady"), "False"),  # 1 of 2 workers
        (
            [pod("head"), pod("worker"), pod("worker", phase="Pending", ready=False)],
            ("True", "HeadPodRunningAndReady"),
            "False",
        ),
    ],
)
def test_status_not_ready(pods: list[dict[str, Any]], head_ready: tuple[str, str], provisioned: str) -> None:
    status = cluster_status(cluster(), pods, SERVICE)
    assert "state" not in status
    assert conditions(status)["HeadPodReady"] == head_ready
    assert conditions(status)["RayClusterProvisioned"][0] == provisioned


def test_provisioned_is_sticky_and_ready_state_too() -> None:
    rc = cluster()
    rc["status"] = cluster_status(rc, [pod("head"), pod("worker"), pod("worker")], SERVICE)
    later = cluster_status(rc, [pod("head", ready=False)], SERVICE)
    assert conditions(later)["RayClusterProvisioned"][0] == "True"
    assert conditions(later)["HeadPodReady"][0] == "False"
    assert later["state"] == "ready"


def test_suspend_goes_through_suspending_to_suspended() -> None:
    rc = cluster(suspend=True)
    suspending = cluster_status(rc, [pod("head")], SERVICE)
    assert conditions(suspending)["RayClusterSuspending"][0] == "True"
    assert conditions(suspending)["RayClusterSuspended"][0] == "False"
    rc["status"] = suspending
    suspended = cluster_status(rc, [], SERVICE)
    assert suspended["state"] == "suspended"
    assert conditions(suspended)["RayClusterSuspended"][0] == "True"
    assert suspended["desiredWorkerReplicas"] == 0
    rc["spec"]["suspend"] = False
    rc["status"] = suspended
    resumed = cluster_status(rc, [pod("head"), pod("worker"), pod("worker")], SERVICE)
    assert resumed["state"] == "ready"
    assert conditions(resumed)["RayClusterSuspended"][0] == "False"
