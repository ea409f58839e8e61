"""CustomResourceDefinitions served generically: applying raypilot's CRDs makes raypilot.io RayJob and
RayService objects work through kubectl and the official client (REST, status subresource, generation,
watch, finalizers, ownerReference garbage collection, printer columns); deleting a CRD withdraws its kind."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.sandbox.apiserver.conftest import ThreadedApiServer
from tests.sandbox.apiserver.test_kubectl import KUBECTL, kubectl

ROOT = Path(__file__).resolve().parents[3]
GROUP, VERSION = "raypilot.io", "v1"

RAYJOB = """
apiVersion: raypilot.io/v1
kind: RayJob
metadata:
  name: {name}
  namespace: {namespace}
spec:
  entrypoint: python -c "print(1)"
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {{}}
      template:
        spec:
          containers: [{{name: ray-head, image: rayproject/ray:2.60.0}}]
"""


@pytest.fixture(scope="module")
def crds_applied(kubectl_env: dict[str, str]) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    kubectl(kubectl_env, "apply", "-k", str(ROOT / "deploy" / "crds"))
    kubectl(kubectl_env, "wait", "--for", "condition=established", "--timeout=10s", "crd/rayjobs.raypilot.io")


def _rayjob(name: str, namespace: str) -> dict[str, Any]:
    import yaml

    loaded: dict[str, Any] = yaml.safe_load(RAYJOB.format(name=name, namespace=namespace))
    return loaded


def test_kubectl_applies_and_lists_raypilot_objects_with_their_columns(
    crds_applied: None, kubectl_env: dict[str, str], namespace: str
) -> None:
    kubectl(kubectl_env, "apply", "-f", "-", stdin=RAYJOB.format(name="sample", namespace=namespace))
    table = kubectl(kubectl_env, "get", "rayjobs.raypilot.io", "-n", namespace)
    assert table.splitlines()[0].split()[:4] == ["NAME", "JOB", "STATUS", "DEPLOYMENT"]
    assert "sample" in table
    assert "sample" in kubectl(kubectl_env, "get", "rpjob", "-n", namespace, "-o", "name")
    # The same kind name in ray.io stays a different resource.
    assert "sample" not in kubectl(kubectl_env, "get", "rayjobs.ray.io", "-n", namespace)


def test_status_subresource_and_generation(
    crds_applied: None, api_client: client.ApiClient, namespace: str
) -> None:
    api = client.CustomObjectsApi(api_client)
    created = api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "rayjobs", _rayjob("gen", namespace)
    )
    assert created["metadata"]["generation"] == 1
    status = {"status": {"jobDeploymentStatus": "Initializing"}}
    written = api.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, "rayjobs", "gen", status)
    assert written["status"] == {"jobDeploymentStatus": "Initializing"}
    assert written["metadata"]["generation"] == 1  # a status write is no spec change
    changed = api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        "rayjobs",
        "gen",
        {"spec": {"entrypoint": "python -c 'print(2)'"}, "status": {}},
    )
    assert changed["metadata"]["generation"] == 2
    assert changed["status"] == {"jobDeploymentStatus": "Initializing"}  # the main resource cannot set status


def test_finalizer_holds_the_object_and_owned_objects_are_collected(
    crds_applied: None, api_client: client.ApiClient, namespace: str
) -> None:
    api, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    body = _rayjob("held", namespace)
    body["metadata"]["finalizers"] = ["raypilot.io/finalizer"]
    owner = api.create_namespaced_custom_object(GROUP, VERSION, namespace, "rayjobs", body)
    reference = {
        "apiVersion": "raypilot.io/v1",
        "kind": "RayJob",
        "name": "held",
        "uid": owner["metadata"]["uid"],
    }
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "owned", "ownerReferences": [reference]}, "data": {"a": "b"}}
    )
    api.delete_namespaced_custom_object(GROUP, VERSION, namespace, "rayjobs", "held")
    held = api.get_namespaced_custom_object(GROUP, VERSION, namespace, "rayjobs", "held")
    assert held["metadata"]["deletionTimestamp"]
    assert core.read_namespaced_config_map("owned", namespace).data == {"a": "b"}
    api.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "rayjobs", "held", {"metadata": {"finalizers": None}}
    )
    for read in (
        lambda: api.get_namespaced_custom_object(GROUP, VERSION, namespace, "rayjobs", "held"),
        lambda: core.read_namespaced_config_map("owned", namespace),
    ):
        with pytest.raises(ApiException) as gone:
            read()
        assert gone.value.status == 404


def test_watch_sees_every_change(crds_applied: None, api_client: client.ApiClient, namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    listed = api.list_namespaced_custom_object(GROUP, VERSION, namespace, "rayjobs")
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def follow() -> None:
        stream = watch.Watch()
        for event in stream.stream(
            api.list_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            "rayjobs",
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=20,
        ):
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if event["type"] == "DELETED":
                stream.stop()
        done.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    api.create_namespaced_custom_object(GROUP, VERSION, namespace, "rayjobs", _rayjob("watched", namespace))
    api.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "rayjobs", "watched", {"status": {"jobStatus": "RUNNING"}}
    )
    api.delete_namespaced_custom_object(GROUP, VERSION, namespace, "rayjobs", "watched")
    assert done.wait(20)
    assert seen == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]


def test_a_deleted_crd_withdraws_its_kind(apiserver: ThreadedApiServer, api_client: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api_client)
    definition = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {}}}],
        },
    }
    created = extensions.create_custom_resource_definition(definition)
    assert {c.type for c in created.status.conditions} == {"NamesAccepted", "Established"}
    api = client.CustomObjectsApi(api_client)
    api.create_cluster_custom_object("example.com", "v1", "widgets", {"metadata": {"name": "w"}})
    extensions.delete_custom_resource_definition("widgets.example.com")
    with pytest.raises(ApiException) as gone:
        api.list_cluster_custom_object("example.com", "v1", "widgets")
    assert gone.value.status == 404
    bad = {**definition, "metadata": {"name": "wrong.example.com"}}
    with pytest.raises(ApiException) as rejected:
        extensions.create_custom_resource_definition(bad)
    assert rejected.value.status == 422
