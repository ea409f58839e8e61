"""What KubeRay's RayCluster controller creates, as plain objects: head/worker pods and the head Service.

Pure functions of the RayCluster dict (plus a random suffix), so they are table-tested without a Store.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"
IDENTIFIER_LABEL = "ray.io/identifier"
HEAD_GROUP = "headgroup"
DISABLE_PROVISIONED_HEAD_RESTART = "ray.io/disable-provisioned-head-restart"
AUTH_TOKEN_SECRET_KEY = "auth_token"
MAX_REPLICAS_DEFAULT = 2147483647

# Head Service ports when the head container declares none (KubeRay's defaults plus Serve's).
DEFAULT_HEAD_PORTS: tuple[tuple[str, int], ...] = (
    ("gcs-server", 6379),
    ("dashboard", 8265),
    ("client", 10001),
    ("serve", 8000),
)
_PORT_KEY_BY_NAME = {
    "dashboard": "dashboard",
    "client": "client",
    "gcs-server": "gcs-server",
    "gcs": "gcs-server",
    "metrics": "metrics",
}
_PORT_KEY_BY_NUMBER = {8265: "dashboard", 8000: "serve", 10001: "client", 6379: "gcs-server", 8080: "metrics"}
# KubeRay's default --metrics-export-port. A Pod accepts connections on any port its processes listen on,
# declared or not, so the head Pod forwards this one even when the container does not list it.
METRICS_PORT = 8080


def runtime_port_key(name: str | None, number: int) -> str | None:
    """Which port of the local Ray head (RealRayHead/SimulatedDashboard `ports` key) a container port means:
    by KubeRay's port names first ("serve" and "serve-*" are Serve), then by Ray's default numbers."""
    if name:
        if name == "serve" or name.startswith("serve-"):
            return "serve"
        if name in _PORT_KEY_BY_NAME:
            return _PORT_KEY_BY_NAME[name]
    return _PORT_KEY_BY_NUMBER.get(number)


def head_container_ports(cluster: Mapping[str, Any]) -> list[tuple[str | None, int]]:
    """(name, containerPort) of the head's Ray container, or the defaults when it declares none."""
    containers = _template_spec(_head_spec(cluster)).get("containers") or [{}]
    declared = [(p.get("name"), int(p["containerPort"])) for p in containers[0].get("ports") or []]
    return declared or [(name, number) for name, number in DEFAULT_HEAD_PORTS]


def desired_worker_pods(group: Mapping[str, Any], cluster_suspended: bool) -> int:
    """clamp(replicas ?? min, min, max) x numOfHosts; 0 when the group or the whole cluster is suspended."""
    if cluster_suspended or group.get("suspend"):
        return 0
    low = int(group.get("minReplicas") or 0)
    maximum = group.get("maxReplicas")
    high = MAX_REPLICAS_DEFAULT if maximum is None else int(maximum)
    replicas = group.get("replicas")
    wanted = low if replicas is None else int(replicas)
    return max(low, min(wanted, high)) * int(group.get("numOfHosts") or 1)


def worker_replica_bounds(cluster: Mapping[str, Any]) -> tuple[int, int]:
    """(minWorkerReplicas, maxWorkerReplicas) as KubeRay sums them over groups (times numOfHosts)."""
    low = high = 0
    for group in (cluster.get("spec") or {}).get("workerGroupSpecs") or []:
        if group.get("suspend"):
            continue
        hosts = int(group.get("numOfHosts") or 1)
        low += int(group.get("minReplicas") or 0) * hosts
        maximum = group.get("maxReplicas")
        high += (MAX_REPLICAS_DEFAULT if maximum is None else int(maximum)) * hosts
    return low, min(high, MAX_REPLICAS_DEFAULT)


def owner_reference(cluster: Mapping[str, Any]) -> dict[str, Any]:
    meta = cluster["metadata"]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def head_service_name(cluster_name: str) -> str:
    return f"{cluster_name}-head-svc"


def auth_secret_name(cluster: Mapping[str, Any]) -> str | None:
    """The Secret holding the Ray auth token when `authOptions.mode: token`, else None."""
    options = (cluster.get("spec") or {}).get("authOptions") or {}
    if options.get("mode") != "token":
        return None
    return str(options.get("secretName") or cluster["metadata"]["name"])


def _head_spec(cluster: Mapping[str, Any]) -> Mapping[str, Any]:
    return (cluster.get("spec") or {}).get("headGroupSpec") or {}


def _template_spec(group: Mapping[str, Any]) -> Mapping[str, Any]:
    return (group.get("template") or {}).get("spec") or {}


def _ray_pod(
    cluster: Mapping[str, Any], group: Mapping[str, Any], name: str, extra_labels: Mapping[str, str]
) -> dict[str, Any]:
    meta = cluster["metadata"]
    template = group.get("template") or {}
    template_meta = template.get("metadata") or {}
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    secret = auth_secret_name(cluster)
    containers = spec.get("containers") or []
    if secret is not None and containers:
        env = containers[0].setdefault("env", [])
        names = {var.get("name") for var in env}
        if "RAY_AUTH_MODE" not in names:
            env.append({"name": "RAY_AUTH_MODE", "value": "token"})
        if "RAY_AUTH_TOKEN" not in names:
            token_ref = {"secretKeyRef": {"name": secret, "key": AUTH_TOKEN_SECRET_KEY}}
            env.append({"name": "RAY_AUTH_TOKEN", "valueFrom": token_ref})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace", "default"),
            "labels": {
                **(template_meta.get("labels") or {}),
                CLUSTER_LABEL: meta["name"],
                "ray.io/is-ray-node": "yes",
                "app.kubernetes.io/name": "kuberay",
                "app.kubernetes.io/created-by": "kuberay-operator",
                **extra_labels,
            },
            "annotations": dict(template_meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": {**spec, "nodeName": "sandbox"},
        "status": {"phase": "Pending"},
    }


def head_pod(cluster: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    labels = {NODE_TYPE_LABEL: "head", GROUP_LABEL: HEAD_GROUP, IDENTIFIER_LABEL: f"{name}-head"}
    return _ray_pod(cluster, _head_spec(cluster), f"{name}-head-{suffix}", labels)


def worker_pod(cluster: Mapping[str, Any], group: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    name, group_name = cluster["metadata"]["name"], group["groupName"]
    labels = {NODE_TYPE_LABEL: "worker", GROUP_LABEL: group_name, IDENTIFIER_LABEL: f"{name}-worker"}
    return _ray_pod(cluster, group, f"{name}-{group_name}-worker-{suffix}", labels)


def head_service(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The head Service. KubeRay makes a ClusterIP one headless and publishes the head's address even while
    the pod is not Ready (a SidecarMode head pod whose submitter exited is not Ready, and its dashboard must
    still answer). The sandbox gives it a clusterIP so that the Service proxy serves it (its serviceIP is then
    that clusterIP instead of the pod IP), and publishes not-ready addresses as KubeRay does."""
    meta = cluster["metadata"]
    name = meta["name"]
    head = _head_spec(cluster)
    override = head.get("headService") or {}
    ports = [
        {"name": port_name or f"port-{number}", "port": number, "targetPort": number, "protocol": "TCP"}
        for port_name, number in head_container_ports(cluster)
    ]
    selector = {CLUSTER_LABEL: name, NODE_TYPE_LABEL: "head"}
    labels = {
        CLUSTER_LABEL: name,
        NODE_TYPE_LABEL: "head",
        IDENTIFIER_LABEL: f"{name}-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    override_meta = override.get("metadata") or {}
    service_type = head.get("serviceType") or "ClusterIP"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": override_meta.get("name") or head_service_name(name),
            "namespace": meta.get("namespace", "default"),
            "labels": {**(override_meta.get("labels") or {}), **labels},
            "annotations": dict(override_meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": {
            "type": service_type,
            "selector": selector,
            "ports": ports,
            **({"publishNotReadyAddresses": True} if service_type == "ClusterIP" else {}),
        },
    }
