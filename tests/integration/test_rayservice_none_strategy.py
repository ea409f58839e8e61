"""upgradeStrategy None with simulated Ray on the real stack (KubeRay's RayCluster controller: no roll on a
template change): without an annotation the cluster keeps its spec and Pods and
the status says the change was not applied; with raypilot.io/in-place-restart every Pod is replaced, worker
group then head, and Serve answers from the new spec."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.rayservice_helpers import active_cluster, is_running, rayservice, wait_for_status
from tests.integration.stack import Stack

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(400)]


def none_rayservice(namespace: str, name: str, version: str, restart: bool) -> dict[str, Any]:
    manifest = rayservice(namespace, name, version)
    manifest["spec"]["upgradeStrategy"] = {"type": "None"}
    if restart:
        manifest["metadata"]["annotations"] = {"raypilot.io/in-place-restart": "true"}
    return manifest


def condition(status: dict[str, Any], kind: str) -> tuple[str, str]:
    found = next((c for c in status.get("conditions") or [] if c["type"] == kind), {})
    return str(found.get("status", "")), str(found.get("reason", ""))


def pods_of(stack: Stack, namespace: str, cluster: str) -> dict[str, str]:
    """uid -> "<node type> <APP_VERSION of its Ray container>" for every Pod of the cluster (only the head's
    template sets APP_VERSION)."""
    listed = stack.core.list_namespaced_pod(namespace, label_selector=f"ray.io/cluster={cluster}").items
    found: dict[str, str] = {}
    for pod in listed:
        if pod.metadata.deletion_timestamp:
            continue
        env = {e.name: e.value for e in pod.spec.containers[0].env or []}
        found[str(pod.metadata.uid)] = (
            f"{pod.metadata.labels['ray.io/node-type']} {env.get('APP_VERSION', '')}"
        )
    return found


def version_served(stack: Stack, namespace: str, name: str) -> str:
    spec = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
    assert spec is not None
    return str(httpx.get(f"http://{spec.cluster_ip}:8000/", timeout=10).json()["version"])


async def test_strategy_none_without_and_with_in_place_restart(kube_stack: Stack) -> None:
    stack = kube_stack
    namespace = stack.namespace()
    kept = await stack.start(none_rayservice(namespace, "kept", "v1", restart=False))
    rolled = await stack.start(none_rayservice(namespace, "rolled", "v1", restart=True))
    kept_cluster = active_cluster(
        await wait_for_status(stack, kept, is_running, within=120, what="kept Running")
    )
    rolled_cluster = active_cluster(
        await wait_for_status(stack, rolled, is_running, within=120, what="rolled Running")
    )
    kept_pods, rolled_pods = (
        pods_of(stack, namespace, kept_cluster),
        pods_of(stack, namespace, rolled_cluster),
    )
    assert sorted(rolled_pods.values()) == ["head v1", "worker "]

    await kept.execute_update("apply", none_rayservice(namespace, "kept", "v2", restart=False))
    await rolled.execute_update("apply", none_rayservice(namespace, "rolled", "v2", restart=True))
    await wait_for_status(
        stack,
        rolled,
        lambda status: (
            condition(status, "InPlaceRestart") == ("False", "RestartComplete") and is_running(status)
        ),
        within=180,
        what="rolled restarted",
    )
    not_applied = await wait_for_status(
        stack,
        kept,
        lambda status: condition(status, "ClusterSpecNotApplied")[0] == "True",
        within=60,
        what="kept reports the change as not applied",
    )

    # Without the annotation, as KubeRay: same cluster, same Pods, v1 still served.
    assert active_cluster(not_applied) == kept_cluster
    assert pods_of(stack, namespace, kept_cluster) == kept_pods
    assert version_served(stack, namespace, "kept") == "v1"
    # With it: same cluster, every Pod replaced from the new template, v2 served.
    after = pods_of(stack, namespace, rolled_cluster)
    assert not set(after) & set(rolled_pods)
    assert sorted(after.values()) == ["head v2", "worker "]
    assert version_served(stack, namespace, "rolled") == "v2"
