"""The RayCluster status KubeRay would write, as a pure function of the cluster, its pods and head Service."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sandbox.controllers.raycluster_pods import (
    NODE_TYPE_LABEL,
    desired_worker_pods,
    worker_replica_bounds,
)
from sandbox.controllers.raycluster_podstatus import now_rfc3339

HEAD_POD_READY = "HeadPodReady"
PROVISIONED = "RayClusterProvisioned"
SUSPENDING = "RayClusterSuspending"
SUSPENDED = "RayClusterSuspended"


def pod_running_and_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def node_type(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(NODE_TYPE_LABEL, ""))


def set_condition(
    conditions: list[dict[str, Any]], kind: str, value: bool, reason: str, message: str = ""
) -> list[dict[str, Any]]:
    """meta.SetStatusCondition: lastTransitionTime moves only when the status flips."""
    status = "True" if value else "False"
    updated = []
    found = False
    for condition in conditions:
        if condition.get("type") == kind:
            found = True
            since = condition.get("lastTransitionTime") if condition.get("status") == status else None
            condition = {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": since or now_rfc3339(),
            }
        updated.append(condition)
    if not found:
        updated.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now_rfc3339(),
            }
        )
    return updated


def condition_is_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def _head_pod_condition(
    conditions: list[dict[str, Any]], head: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    if head is None:
        return set_condition(conditions, HEAD_POD_READY, False, "HeadPodNotFound", "Head Pod not found")
    if pod_running_and_ready(head):
        return set_condition(conditions, HEAD_POD_READY, True, "HeadPodRunningAndReady")
    conditions_of_pod: list[dict[str, Any]] = (head.get("status") or {}).get("conditions") or []
    ready: dict[str, Any] = next((c for c in conditions_of_pod if c.get("type") == "Ready"), {})
    reason = ready.get("reason") or "HeadPodNotReady"
    return set_condition(conditions, HEAD_POD_READY, False, reason, ready.get("message") or "")


def cluster_status(
    cluster: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], head_service: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The new `.status` (without lastUpdateTime, which the caller sets when something changed)."""
    spec = cluster.get("spec") or {}
    previous = dict(cluster.get("status") or {})
    suspended = bool(spec.get("suspend"))
    live = [pod for pod in pods if not (pod.get("metadata") or {}).get("deletionTimestamp")]
    heads = [pod for pod in live if node_type(pod) == "head"]
    workers = [pod for pod in live if node_type(pod) == "worker"]
    desired = sum(desired_worker_pods(group, suspended) for group in spec.get("workerGroupSpecs") or [])
    head = heads[0] if heads else None
    workers_running = [pod for pod in workers if (pod.get("status") or {}).get("phase") == "Running"]
    workers_ready = [pod for pod in workers_running if pod_running_and_ready(pod)]
    all_ready = (
        head is not None
        and pod_running_and_ready(head)
        and len(workers) == desired
        and len(workers_ready) == desired
    )

    conditions = _head_pod_condition([dict(c) for c in previous.get("conditions") or []], head)
    if condition_is_true(previous, PROVISIONED):
        pass  # sticky: once provisioned, a later pod failure does not undo it
    elif all_ready and not suspended:
        conditions = set_condition(
            conditions,
            PROVISIONED,
            True,
            "AllPodRunningAndReadyFirstTime",
            "All Ray Pods are ready for the first time",
        )
    else:
        conditions = set_condition(
            conditions,
            PROVISIONED,
            False,
            "RayClusterPodsProvisioning",
            "RayCluster Pods are being provisioned for first time",
        )
    state = previous.get("state", "")
    if suspended:
        done = not live
        conditions = set_condition(conditions, SUSPENDING, not done, SUSPENDING)
        conditions = set_condition(conditions, SUSPENDED, done, SUSPENDED)
        if done:
            state = "suspended"
    else:
        if any(c.get("type") in (SUSPENDING, SUSPENDED) for c in conditions):
            conditions = set_condition(conditions, SUSPENDING, False, SUSPENDING)
            conditions = set_condition(conditions, SUSPENDED, False, SUSPENDED)
        if all_ready:
            state = "ready"

    low, high = worker_replica_bounds(cluster)
    status: dict[str, Any] = {
        **{key: value for key, value in previous.items() if key == "lastUpdateTime"},
        "state": state,
        "conditions": conditions,
        "desiredWorkerReplicas": desired,
        "minWorkerReplicas": low,
        "maxWorkerReplicas": high,
        "readyWorkerReplicas": len(workers_ready),
        "availableWorkerReplicas": len(workers_running),
        "observedGeneration": (cluster.get("metadata") or {}).get("generation", 1),
        "head": _head_info(head, head_service),
        "endpoints": _endpoints(head_service),
    }
    if not state:
        status.pop("state")
    return status


def _head_info(head: Mapping[str, Any] | None, service: Mapping[str, Any] | None) -> dict[str, str]:
    info: dict[str, str] = {}
    pod_ip = ((head or {}).get("status") or {}).get("podIP")
    if head is not None:
        info["podName"] = head["metadata"]["name"]
    if pod_ip:
        info["podIP"] = pod_ip
    if service is not None:
        info["serviceName"] = service["metadata"]["name"]
        cluster_ip = (service.get("spec") or {}).get("clusterIP")
        service_ip = pod_ip if cluster_ip in (None, "", "None") else cluster_ip
        if service_ip:
            info["serviceIP"] = service_ip
    return info


def _endpoints(service: Mapping[str, Any] | None) -> dict[str, str]:
    ports = ((service or {}).get("spec") or {}).get("ports") or []
    return {str(port.get("name") or port["port"]): str(port["port"]) for port in ports}
