"""RayService Services: head and serve Service manifests, reconcileServices' update rule,
reconcilePerClusterServeService, updateHeadPodServeLabel and which cluster the Services follow."""

from __future__ import annotations

from typing import Any

import pytest

from models.raycluster import RayCluster
from models.rayservice import RayService
from workflows.decisions.rayservice.services import (
    MISSING_SERVE_PORT_MESSAGE,
    MissingServePortError,
    cluster_name_from_service,
    head_pod_serve_label,
    head_service_manifest,
    per_cluster_serve_service_manifest,
    per_cluster_serve_service_to_create,
    serve_port,
    serve_service_manifest,
    service_update,
    services_target_cluster,
    should_update_service,
)

OWNERSHIP = {
    "ray.io/originated-from-cr-name": "svc",
    "ray.io/originated-from-crd": "RayService",
    "app.kubernetes.io/created-by": "raypilot",
}


def cluster_spec(ports: list[dict[str, Any]] | None, service_type: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "ray-head", "image": "rayproject/ray:2.60.0"}
    if ports is not None:
        container["ports"] = ports
    head: dict[str, Any] = {"template": {"spec": {"containers": [container]}}}
    if service_type:
        head["serviceType"] = service_type
    return {"headGroupSpec": head}


SERVE_PORTS = [
    {"name": "dashboard", "containerPort": 8265},
    {"name": "serve", "containerPort": 9000},
    {"name": "serve-grpc", "containerPort": 9001},
    {"containerPort": 1234},
]


def rayservice(ports: list[dict[str, Any]] | None = SERVE_PORTS, **spec: Any) -> RayService:
    return RayService.model_validate(
        {
            "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"rayClusterConfig": cluster_spec(ports), **spec},
        }
    )


def cluster(
    name: str = "svc-abcde", ports: list[dict[str, Any]] | None = SERVE_PORTS, uid: str = ""
) -> RayCluster:
    metadata = {"name": name, "namespace": "ns", **({"uid": uid} if uid else {})}
    return RayCluster.model_validate({"metadata": metadata, "spec": cluster_spec(ports)})


def test_head_service_manifest() -> None:
    service = head_service_manifest(rayservice(), cluster())
    assert service["metadata"] == {
        "name": "svc-head-svc",
        "namespace": "ns",
        "labels": {**OWNERSHIP, "ray.io/node-type": "head", "ray.io/identifier": "svc-head"},
        "annotations": {"raypilot.io/workflow-id": "rayservice/ns/svc"},
    }
    spec = service["spec"]
    assert spec["selector"] == {"ray.io/cluster": "svc-abcde", "ray.io/node-type": "head"}
    assert [port["name"] for port in spec["ports"]] == [
        "1234-port",
        "dashboard",
        "metrics",
        "serve",
        "serve-grpc",
    ]
    assert {port["appProtocol"] for port in spec["ports"]} == {"tcp"}
    assert (spec["clusterIP"], spec["publishNotReadyAddresses"]) == ("None", True)  # headless by default
    assert "clusterIP" not in head_service_manifest(rayservice(), cluster(), cluster_ip_service=True)["spec"]


def test_head_service_without_container_ports_uses_the_default_ports() -> None:
    ports = {
        port["name"]: port["port"]
        for port in head_service_manifest(rayservice(None), cluster(ports=None))["spec"]["ports"]
    }
    assert ports == {"client": 10001, "dashboard": 8265, "gcs-server": 6379, "metrics": 8080, "serve": 8000}


def test_serve_service_manifest() -> None:
    service = serve_service_manifest(rayservice(), cluster(), incremental=False)
    assert service["metadata"]["name"] == "svc-serve-svc"
    assert service["metadata"]["labels"] == {**OWNERSHIP, "ray.io/serve": "svc-serve"}
    assert service["spec"] == {
        "selector": {"ray.io/cluster": "svc-abcde", "ray.io/serve": "true"},
        "ports": [{"name": "serve", "port": 9000}, {"name": "serve-grpc", "port": 9001}],
    }


def test_custom_serve_service_keeps_user_ports_of_the_same_name() -> None:
    custom = {
        "metadata": {"name": "my-serve", "namespace": "elsewhere", "labels": {"x": "y"}},
        "spec": {
            "type": "NodePort",
            "ports": [{"name": "serve-grpc", "port": 9001, "appProtocol": "kubernetes.io/h2c"}],
        },
    }
    service = serve_service_manifest(rayservice(serveService=custom), cluster(), incremental=False)
    assert service["metadata"]["name"] == "my-serve"
    assert service["metadata"]["namespace"] == "ns"  # the RayService's namespace wins
    assert service["metadata"]["labels"] == {"x": "y", **OWNERSHIP, "ray.io/serve": "svc-serve"}
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["ports"] == [
        {"name": "serve", "port": 9000},
        {"name": "serve-grpc", "port": 9001, "appProtocol": "kubernetes.io/h2c"},
    ]
    assert service["spec"]["selector"] == {"ray.io/cluster": "svc-abcde", "ray.io/serve": "true"}


def test_incremental_serve_service_is_named_after_the_cluster_and_ignores_serve_service() -> None:
    rs = rayservice(serveService={"metadata": {"name": "my-serve"}})
    service = serve_service_manifest(rs, cluster(), incremental=True)
    assert service["metadata"]["name"] == "svc-abcde-serve-svc"
    assert service["metadata"]["labels"]["ray.io/serve"] == "svc-abcde-serve"


def test_serve_service_needs_a_serve_port() -> None:
    no_serve = [{"name": "dashboard", "containerPort": 8265}]
    with pytest.raises(MissingServePortError) as error:
        serve_service_manifest(rayservice(no_serve), cluster(ports=no_serve), incremental=False)
    assert str(error.value) == MISSING_SERVE_PORT_MESSAGE
    custom = rayservice(no_serve, serveService={"spec": {"ports": [{"name": "http", "port": 80}]}})
    assert serve_service_manifest(custom, cluster(ports=no_serve), incremental=False)["spec"]["ports"] == [
        {"name": "http", "port": 80}
    ]


@pytest.mark.parametrize(
    ("uid", "owner_references"),
    [
        (
            "uid-1",
            [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": "svc-abcde",
                    "uid": "uid-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        ),
        ("", None),  # not created yet: no owner to name
    ],
)
def test_per_cluster_serve_service(uid: str, owner_references: list[dict[str, Any]] | None) -> None:
    service = per_cluster_serve_service_manifest(rayservice(), cluster(uid=uid))
    assert service["metadata"]["name"] == "svc-abcde-serve-svc"
    assert service["spec"]["selector"] == {"ray.io/cluster": "svc-abcde", "ray.io/serve": "true"}
    assert service["metadata"].get("ownerReferences") == owner_references


def test_per_cluster_serve_service_is_only_created() -> None:
    assert per_cluster_serve_service_to_create(rayservice(), None, None) is None  # nil RayCluster: no-op
    created = per_cluster_serve_service_to_create(rayservice(), cluster(uid="u"), None)
    assert created == per_cluster_serve_service_manifest(rayservice(), cluster(uid="u"))
    assert per_cluster_serve_service_to_create(rayservice(), cluster(), {"metadata": {}}) is None  # exists


@pytest.mark.parametrize(("cluster_name", "expected"), [("svc-abcde", False), ("svc-fghij", True)])
def test_reconcile_services_updates_only_when_the_cluster_switches(cluster_name: str, expected: bool) -> None:
    existing = serve_service_manifest(rayservice(), cluster(), incremental=False)
    existing["spec"]["clusterIP"] = "10.96.0.7"
    existing["metadata"]["resourceVersion"] = "3"
    desired = serve_service_manifest(rayservice(), cluster(cluster_name), incremental=False)
    assert should_update_service(existing, desired) is expected
    updated = service_update(existing, desired)
    assert cluster_name_from_service(updated) == cluster_name
    assert updated["spec"]["clusterIP"] == "10.96.0.7"
    assert updated["metadata"]["resourceVersion"] == "3"


def test_cluster_name_from_service() -> None:
    assert cluster_name_from_service(None) == ""
    assert cluster_name_from_service({"spec": {}}) == ""


@pytest.mark.parametrize(
    ("exclude", "healthy", "label"),
    [(True, True, "false"), (False, True, "true"), (True, False, "false"), (False, False, "false")],
)
def test_head_pod_serve_label(exclude: bool, healthy: bool, label: str) -> None:
    assert head_pod_serve_label(exclude, healthy) == label


@pytest.mark.parametrize(
    ("active_ready", "pending_ready", "incremental_in_progress", "expected"),
    [
        (False, False, False, None),
        (True, False, False, "active"),
        (False, True, False, "pending"),  # blue/green switch (or first deployment)
        (True, True, False, "pending"),
        (True, True, True, "active"),  # incremental: the Gateway moves traffic instead
    ],
)
def test_services_target_cluster(
    active_ready: bool, pending_ready: bool, incremental_in_progress: bool, expected: str | None
) -> None:
    assert services_target_cluster(active_ready, pending_ready, incremental_in_progress) == expected


def test_serve_port() -> None:
    assert serve_port(cluster()) == 9000
    assert serve_port(cluster(ports=[])) == 8000
    assert serve_port(None) == 8000
