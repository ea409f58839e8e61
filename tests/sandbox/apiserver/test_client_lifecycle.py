"""Conformance through the official Python client: watches, finalizers, garbage collection, namespaces."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

if TYPE_CHECKING:
    from tests.sandbox.apiserver.conftest import ThreadedApiServer

RAY = ("ray.io", "v1")


def _cm(name: str, **meta: Any) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, **meta), data={"k": "v"})


def _owner_ref(owner: dict[str, Any], block: bool = True) -> client.V1OwnerReference:
    return client.V1OwnerReference(
        api_version="ray.io/v1",
        kind="RayCluster",
        name=owner["metadata"]["name"],
        uid=owner["metadata"]["uid"],
        controller=True,
        block_owner_deletion=block,
    )


def _cluster_with_pods(
    api: client.ApiClient, namespace: str, pod_finalizers: list[str] | None = None
) -> None:
    owner = client.CustomObjectsApi(api).create_namespaced_custom_object(
        *RAY,
        namespace,
        "rayclusters",
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"}, "spec": {}},
    )
    core = client.CoreV1Api(api)
    for name in ("c-head-abcde", "c-workers-worker-fghij"):
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(
                name=name, owner_references=[_owner_ref(owner)], finalizers=pod_finalizers
            ),
            spec=client.V1PodSpec(containers=[client.V1Container(name="ray", image="ray")]),
        )
        core.create_namespaced_pod(namespace, pod)


def _exists(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def test_watch_streams_added_modified_deleted(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_config_map(namespace, _cm("a"))
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "2"}})
    core.delete_namespaced_config_map("a", namespace)
    seen = []
    stream = watch.Watch().stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=str(int(created.metadata.resource_version) - 1),
        timeout_seconds=5,
    )
    for event in stream:
        seen.append((event["type"], event["object"].data["k"]))
        if len(seen) == 3:
            break
    assert seen == [("ADDED", "v"), ("MODIFIED", "2"), ("DELETED", "2")]


def test_watch_resumes_from_resource_version(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("before"))
    listed = core.list_namespaced_config_map(namespace)
    core.create_namespaced_config_map(namespace, _cm("after", labels={"x": "y"}))
    w = watch.Watch()
    names = []
    for event in w.stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=5,
    ):
        names.append(event["object"].metadata.name)
        w.stop()
    assert names == ["after"]


def test_watch_timeout_seconds_ends_the_stream(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    started = time.monotonic()
    events = list(watch.Watch().stream(core.list_namespaced_pod, namespace, timeout_seconds=1))
    assert events == []
    assert 0.9 <= time.monotonic() - started < 5


def test_watch_from_compacted_resource_version_is_410(
    api_client: client.ApiClient, apiserver: ThreadedApiServer, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    old = core.create_namespaced_config_map(namespace, _cm("a")).metadata.resource_version
    core.create_namespaced_config_map(namespace, _cm("b"))
    apiserver.call(apiserver.store.compact)
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, namespace, resource_version=old, timeout_seconds=5
        ):
            pass
    assert err.value.status == 410


def test_watch_list_sends_initial_events_then_a_bookmark(
    api_client: client.ApiClient, apiserver: ThreadedApiServer, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("existing"))
    query = {
        "watch": "1",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "5",
    }
    url = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    with httpx.stream("GET", url, params=query, timeout=10) as response:
        lines = response.iter_lines()
        first, second = json.loads(next(lines)), json.loads(next(lines))
        core.create_namespaced_config_map(namespace, _cm("later"))
        third = json.loads(next(lines))
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "existing")
    assert second["type"] == "BOOKMARK"
    assert second["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert (third["type"], third["object"]["metadata"]["name"]) == ("ADDED", "later")


def test_finalizers_keep_the_object_until_removed(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("f", finalizers=["raypilot.io/cleanup"]))
    core.delete_namespaced_config_map("f", namespace)
    lingering = core.read_namespaced_config_map("f", namespace)
    assert lingering.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("f", namespace, {"metadata": {"finalizers": None}})
    assert not _exists(core.read_namespaced_config_map, "f", namespace)


def test_gc_background_deletes_dependents(api_client: client.ApiClient, namespace: str) -> None:
    _cluster_with_pods(api_client, namespace)
    client.CustomObjectsApi(api_client).delete_namespaced_custom_object(
        *RAY, namespace, "rayclusters", "c", body=client.V1DeleteOptions(propagation_policy="Background")
    )
    assert client.CoreV1Api(api_client).list_namespaced_pod(namespace).items == []


def test_gc_orphan_keeps_dependents_without_owner(api_client: client.ApiClient, namespace: str) -> None:
    _cluster_with_pods(api_client, namespace)
    client.CustomObjectsApi(api_client).delete_namespaced_custom_object(
        *RAY, namespace, "rayclusters", "c", propagation_policy="Orphan"
    )
    pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace).items
    assert len(pods) == 2
    assert all(not p.metadata.owner_references for p in pods)


def test_gc_foreground_waits_for_blocking_dependents(api_client: client.ApiClient, namespace: str) -> None:
    _cluster_with_pods(api_client, namespace, pod_finalizers=["test/hold"])
    custom, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    custom.delete_namespaced_custom_object(
        *RAY, namespace, "rayclusters", "c", body=client.V1DeleteOptions(propagation_policy="Foreground")
    )
    owner = custom.get_namespaced_custom_object(*RAY, namespace, "rayclusters", "c")
    assert owner["metadata"]["deletionTimestamp"]
    assert "foregroundDeletion" in owner["metadata"]["finalizers"]
    pods = core.list_namespaced_pod(namespace).items
    assert all(p.metadata.deletion_timestamp is not None for p in pods)
    for pod in pods:
        core.patch_namespaced_pod(pod.metadata.name, namespace, {"metadata": {"finalizers": None}})
    assert core.list_namespaced_pod(namespace).items == []
    assert not _exists(custom.get_namespaced_custom_object, *RAY, namespace, "rayclusters", "c")


def test_delete_collection_with_label_selector(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("keep", labels={"app": "other"}))
    for name in ("x1", "x2"):
        core.create_namespaced_config_map(namespace, _cm(name, labels={"app": "x"}))
    core.delete_collection_namespaced_config_map(namespace, label_selector="app=x")
    assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["keep"]


def test_namespace_deletion_removes_contents(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("a"))
    core.delete_namespace(namespace)
    assert not _exists(core.read_namespace, namespace)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, _cm("b"))
    assert err.value.status == 404
