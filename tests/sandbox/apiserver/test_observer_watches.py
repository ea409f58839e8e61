"""The watches the Kubernetes observer makes, through the official client against the sandbox's API server:
for RayClusters, raypilot's Jobs and head Pods, a watch from a list's resourceVersion with a label selector
streams exactly the later changes, and a watch from a compacted resourceVersion fails with 410 Gone (the
observer then lists again)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

if TYPE_CHECKING:
    from tests.sandbox.apiserver.conftest import ThreadedApiServer

RAYPILOT = {"app.kubernetes.io/created-by": "raypilot"}
HEAD = {"ray.io/node-type": "head", "ray.io/cluster": "rc"}


def _raycluster(name: str, labels: dict[str, str]) -> dict[str, Any]:
    head = {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "labels": labels},
        "spec": {"headGroupSpec": {"rayStartParams": {}, **head}},
    }


def _job(name: str, labels: dict[str, str]) -> dict[str, Any]:
    container = {"name": "ray-job-submitter", "image": "x", "command": ["true"]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.60.0"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [container]},
    }


class Kind:
    def __init__(self, api: client.ApiClient, plural: str, namespace: str) -> None:
        self.plural, self.namespace = plural, namespace
        self.custom, self.batch, self.core = (
            client.CustomObjectsApi(api),
            client.BatchV1Api(api),
            client.CoreV1Api(api),
        )

    def create(self, name: str, labels: dict[str, str]) -> None:
        if self.plural == "rayclusters":
            self.custom.create_namespaced_custom_object(
                "ray.io", "v1", self.namespace, "rayclusters", _raycluster(name, labels)
            )
        elif self.plural == "jobs":
            self.batch.create_namespaced_job(self.namespace, _job(name, labels))
        else:
            self.core.create_namespaced_pod(self.namespace, _pod(name, labels))

    def lister(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        if self.plural == "rayclusters":
            return self.custom.list_namespaced_custom_object, ("ray.io", "v1", self.namespace, "rayclusters")
        if self.plural == "jobs":
            return self.batch.list_namespaced_job, (self.namespace,)
        return self.core.list_namespaced_pod, (self.namespace,)

    def list_version(self, selector: str) -> str:
        lister, args = self.lister()
        listed = lister(*args, label_selector=selector)
        metadata = listed["metadata"] if isinstance(listed, dict) else listed.metadata
        return str(metadata["resourceVersion"] if isinstance(metadata, dict) else metadata.resource_version)


def _name(event: dict[str, Any]) -> str:
    obj = event["object"]
    return str(obj["metadata"]["name"] if isinstance(obj, dict) else obj.metadata.name)


@pytest.mark.parametrize(("plural", "labels"), [("rayclusters", {}), ("jobs", RAYPILOT), ("pods", HEAD)])
def test_a_watch_from_a_lists_version_streams_only_later_changes(
    api_client: client.ApiClient, namespace: str, plural: str, labels: dict[str, str]
) -> None:
    kind = Kind(api_client, plural, namespace)
    selector = ",".join(f"{key}={value}" for key, value in labels.items())
    kind.create("before", labels)
    version = kind.list_version(selector)
    kind.create("unlabelled", {} if labels else {"other": "x"})
    kind.create("after", labels)
    lister, args = kind.lister()
    w = watch.Watch()
    seen = []
    for event in w.stream(
        lister, *args, label_selector=selector, resource_version=version, timeout_seconds=3
    ):
        seen.append((event["type"], _name(event)))
        if _name(event) == "after":
            w.stop()
    expected = [("ADDED", "unlabelled"), ("ADDED", "after")] if not labels else [("ADDED", "after")]
    assert seen == expected


@pytest.mark.parametrize("plural", ["rayclusters", "jobs", "pods"])
def test_a_watch_from_a_compacted_version_is_gone(
    api_client: client.ApiClient, apiserver: ThreadedApiServer, namespace: str, plural: str
) -> None:
    kind = Kind(api_client, plural, namespace)
    version = kind.list_version("")
    kind.create("a", {})
    apiserver.call(apiserver.store.compact)
    lister, args = kind.lister()
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(lister, *args, resource_version=version, timeout_seconds=3):
            pass
    assert gone.value.status == 410
