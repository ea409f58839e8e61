"""Conformance through the official Python client: discovery, CRUD, concurrency, patches, selectors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

RAY = ("ray.io", "v1")


def _status(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def _pod(name: str, labels: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="ray-head", image="rayproject/ray:2.60.0", env=[client.V1EnvVar(name="A", value="1")]
                ),
                client.V1Container(name="sidecar", image="busybox"),
            ]
        ),
    )


def _raycluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"rayVersion": "2.60.0", "headGroupSpec": {"rayStartParams": {}, "template": {}}},
    }


def test_discovery_lists_every_served_group(api_client: client.ApiClient) -> None:
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"ray.io", "batch", "discovery.k8s.io", "gateway.networking.k8s.io"} <= groups
    core = client.CoreV1Api(api_client).get_api_resources()
    names = {r.name for r in core.resources}
    assert {"pods", "pods/status", "services/proxy", "configmaps", "secrets", "events", "namespaces"} <= names
    assert client.VersionApi(api_client).get_code().major == "1"


def test_default_namespaces_exist(api_client: client.ApiClient) -> None:
    names = {ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items}
    assert {"default", "kube-system"} <= names


def test_create_sets_metadata_and_read_returns_it(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_pod(namespace, _pod("p"))
    assert created.metadata.uid
    assert created.metadata.creation_timestamp is not None
    assert int(created.metadata.resource_version) > 0
    assert created.status.phase == "Pending"
    assert core.read_namespaced_pod("p", namespace).metadata.uid == created.metadata.uid


def test_already_exists_and_not_found_are_status_bodies(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    with pytest.raises(ApiException) as exists:
        core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"))
        )
    assert exists.value.status == 409
    assert _status(exists.value)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("nope", namespace)
    assert missing.value.status == 404
    assert _status(missing.value)["message"] == 'configmaps "nope" not found'


def test_stale_update_is_conflict(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    first = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"k": "1"})
    )
    core.replace_namespaced_config_map(
        "c", namespace, client.V1ConfigMap(metadata=first.metadata, data={"k": "2"})
    )
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map(
            "c", namespace, client.V1ConfigMap(metadata=first.metadata, data={"k": "3"})
        )
    assert err.value.status == 409
    assert _status(err.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("c", namespace).data == {"k": "2"}


def test_generation_and_status_subresource(api_client: client.ApiClient, namespace: str) -> None:
    custom = client.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(*RAY, namespace, "rayclusters", _raycluster("rc"))
    labelled = custom.patch_namespaced_custom_object(
        *RAY, namespace, "rayclusters", "rc", {"metadata": {"labels": {"a": "b"}}}
    )
    assert labelled["metadata"]["generation"] == 1
    respec = custom.patch_namespaced_custom_object(
        *RAY, namespace, "rayclusters", "rc", {"spec": {"suspend": True}}
    )
    assert respec["metadata"]["generation"] == 2
    status = custom.patch_namespaced_custom_object_status(
        *RAY, namespace, "rayclusters", "rc", {"status": {"state": "ready"}, "spec": {"suspend": False}}
    )
    assert status["status"] == {"state": "ready"}
    assert status["spec"]["suspend"] is True  # the status subresource ignores everything but status
    main = custom.patch_namespaced_custom_object(
        *RAY, namespace, "rayclusters", "rc", {"status": {"state": "x"}}
    )
    assert main["status"] == {"state": "ready"}  # and the main resource ignores status


def test_strategic_merge_patch_merges_containers_by_name(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, _pod("p"))
    patch = {"spec": {"containers": [{"name": "ray-head", "env": [{"name": "B", "value": "2"}]}]}}
    patched = core.patch_namespaced_pod("p", namespace, patch)
    head = patched.spec.containers[0]
    assert [c.name for c in patched.spec.containers] == ["ray-head", "sidecar"]
    assert [(e.name, e.value) for e in head.env] == [("A", "1"), ("B", "2")]
    assert head.image == "rayproject/ray:2.60.0"


def test_json_patch(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, _pod("p"))
    patched = core.patch_namespaced_pod(
        "p", namespace, [{"op": "replace", "path": "/spec/containers/1/image", "value": "alpine"}]
    )
    assert patched.spec.containers[1].image == "alpine"


def test_server_side_apply_creates_then_updates(api_client: client.ApiClient, namespace: str) -> None:
    custom = client.CustomObjectsApi(api_client)
    applied = {**_raycluster("rc"), "metadata": {"name": "rc", "labels": {"owner": "me"}}}
    kwargs = {"field_manager": "raypilot", "_content_type": "application/apply-patch+yaml"}
    # Creating by apply answers 201 Created, as kube-apiserver does; the client only decodes a 200 body.
    custom.patch_namespaced_custom_object(*RAY, namespace, "rayclusters", "rc", applied, **kwargs)
    created = custom.get_namespaced_custom_object(*RAY, namespace, "rayclusters", "rc")
    assert created["metadata"]["labels"] == {"owner": "me"}
    applied["spec"]["rayVersion"] = "2.61.0"
    updated = custom.patch_namespaced_custom_object(*RAY, namespace, "rayclusters", "rc", applied, **kwargs)
    assert updated["spec"]["rayVersion"] == "2.61.0"
    assert updated["metadata"]["generation"] == 2
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("ray.io/node-type=head", ["head"]),
        ("ray.io/node-type==head", ["head"]),
        ("ray.io/node-type!=head", ["plain", "worker"]),
        ("ray.io/node-type in (head,worker)", ["head", "worker"]),
        ("ray.io/node-type notin (head)", ["plain", "worker"]),
        ("ray.io/node-type", ["head", "worker"]),
        ("!ray.io/node-type", ["plain"]),
    ],
)
def test_label_selectors(
    api_client: client.ApiClient, namespace: str, selector: str, expected: list[str]
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, _pod("head", {"ray.io/node-type": "head"}))
    core.create_namespaced_pod(namespace, _pod("worker", {"ray.io/node-type": "worker"}))
    core.create_namespaced_pod(namespace, _pod("plain"))
    found = core.list_namespaced_pod(namespace, label_selector=selector)
    assert sorted(p.metadata.name for p in found.items) == expected


def test_field_selector_and_list_resource_version(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    for name in ("a", "b"):
        core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name))
        )
    listed = core.list_namespaced_config_map(namespace, field_selector="metadata.name=b")
    assert [c.metadata.name for c in listed.items] == ["b"]
    assert int(listed.metadata.resource_version) >= int(listed.items[0].metadata.resource_version)
    across = core.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={namespace}")
    assert len(across.items) == 2


def test_service_cluster_ip_allocated_kept_and_released(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    spec = client.V1ServiceSpec(
        selector={"a": "b"}, ports=[client.V1ServicePort(name="dashboard", port=8265)]
    )
    svc = core.create_namespaced_service(
        namespace, client.V1Service(metadata=client.V1ObjectMeta(name="s"), spec=spec)
    )
    ip = svc.spec.cluster_ip
    assert ip.startswith("127.0.1.")
    updated = core.patch_namespaced_service("s", namespace, {"metadata": {"labels": {"x": "y"}}})
    assert updated.spec.cluster_ip == ip
    other = core.create_namespaced_service(
        namespace, client.V1Service(metadata=client.V1ObjectMeta(name="t"), spec=spec)
    )
    assert other.spec.cluster_ip != ip
    headless = client.V1ServiceSpec(cluster_ip="None", ports=spec.ports)
    h = core.create_namespaced_service(
        namespace, client.V1Service(metadata=client.V1ObjectMeta(name="h"), spec=headless)
    )
    assert h.spec.cluster_ip == "None"


def test_jobs_endpointslices_and_gateway_kinds(api_client: client.ApiClient, namespace: str) -> None:
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="submit"),
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never", containers=[client.V1Container(name="c", image="x")]
                )
            )
        ),
    )
    created = client.BatchV1Api(api_client).create_namespaced_job(namespace, job)
    assert created.spec.backoff_limit == 6
    assert created.spec.template.metadata.labels["job-name"] == "submit"
    client.BatchV1Api(api_client).patch_namespaced_job_status(
        "submit", namespace, {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    )
    assert (
        client.BatchV1Api(api_client).read_namespaced_job("submit", namespace).status.conditions[0].type
        == "Complete"
    )
    slice_ = client.V1EndpointSlice(
        metadata=client.V1ObjectMeta(name="s-abc", labels={"kubernetes.io/service-name": "s"}),
        address_type="IPv4",
        endpoints=[client.V1Endpoint(addresses=["127.0.3.9"])],
    )
    client.DiscoveryV1Api(api_client).create_namespaced_endpoint_slice(namespace, slice_)
    slices = client.DiscoveryV1Api(api_client).list_namespaced_endpoint_slice(
        namespace, label_selector="kubernetes.io/service-name=s"
    )
    assert slices.items[0].endpoints[0].addresses == ["127.0.3.9"]
    custom = client.CustomObjectsApi(api_client)
    gateway_class = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": f"gc-{namespace}"},
        "spec": {"controllerName": "raypilot.io/sandbox"},
    }
    custom.create_cluster_custom_object("gateway.networking.k8s.io", "v1", "gatewayclasses", gateway_class)
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "g"},
        "spec": {
            "gatewayClassName": f"gc-{namespace}",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        },
    }
    custom.create_namespaced_custom_object("gateway.networking.k8s.io", "v1", namespace, "gateways", gateway)
    got = custom.get_cluster_custom_object(
        "gateway.networking.k8s.io", "v1", "gatewayclasses", f"gc-{namespace}"
    )
    assert "namespace" not in got["metadata"]
