"""What each wait compares: a small "view" of the watched thing, equal as long as nothing the workflow decides
on changed. Pure functions over Kubernetes / dashboard JSON; a wait returns when the view differs from the
one the workflow passes back (`last_view`).

Views leave out what changes without meaning anything (resourceVersion, timestamps, heartbeat-like status
fields), so an idle cluster never wakes a workflow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from models.naming import LABEL_NODE_TYPE, RAY_CONTAINER_INDEX

# KubeRay's label of a Pod's group (the head's is "headgroup").
LABEL_RAY_GROUP = "ray.io/group"


def _conditions(conditions: Any) -> list[list[str]]:
    return sorted(
        [str(c.get("type") or ""), str(c.get("status") or ""), str(c.get("reason") or "")]
        for c in conditions or []
        if isinstance(c, Mapping)
    )


def _deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def raycluster_view(cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    if cluster is None:
        return {"exists": False}
    status = cluster.get("status") or {}
    head = status.get("head") or {}
    return {
        "exists": True,
        "uid": (cluster.get("metadata") or {}).get("uid"),
        "deleting": _deleting(cluster),
        "generation": (cluster.get("metadata") or {}).get("generation"),
        "observedGeneration": status.get("observedGeneration"),
        "state": status.get("state"),
        "reason": status.get("reason"),
        "conditions": _conditions(status.get("conditions")),
        "head": {key: head.get(key) for key in ("podIP", "podName", "serviceIP", "serviceName")},
        "readyWorkerReplicas": status.get("readyWorkerReplicas"),
        "availableWorkerReplicas": status.get("availableWorkerReplicas"),
        "desiredWorkerReplicas": status.get("desiredWorkerReplicas"),
        "endpoints": status.get("endpoints"),
    }


def raycluster_ready(view: Mapping[str, Any]) -> bool:
    return view.get("state") == "ready"


def raycluster_head_ready(view: Mapping[str, Any]) -> bool:
    return ["HeadPodReady", "True"] in [condition[:2] for condition in view.get("conditions") or []]


def job_view(job: Mapping[str, Any] | None) -> dict[str, Any]:
    """The submitter Job as `k8s_job_submitter_state` reads it: its finished conditions."""
    if job is None:
        return {"exists": False}
    return {
        "exists": True,
        "uid": (job.get("metadata") or {}).get("uid"),
        "deleting": _deleting(job),
        "conditions": _conditions((job.get("status") or {}).get("conditions")),
    }


def _container_states(pod: Mapping[str, Any]) -> list[list[Any]]:
    states = []
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        state = container.get("state") or {}
        phase = next(iter(state), "")
        states.append(
            [
                container.get("name"),
                phase,
                (state.get("terminated") or {}).get("exitCode"),
                int(container.get("restartCount") or 0),
            ]
        )
    return sorted(states, key=lambda entry: str(entry[0]))


def pod_view(pod: Mapping[str, Any] | None) -> dict[str, Any]:
    """A head Pod: identity, phase, IP, readiness and each container's state (running / waiting /
    terminated with its exit code) and restart count."""
    if pod is None:
        return {"exists": False}
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    return {
        "exists": True,
        "name": metadata.get("name"),
        "uid": metadata.get("uid"),
        "deleting": _deleting(pod),
        "phase": status.get("phase"),
        "podIP": status.get("podIP"),
        "ready": ready,
        "containers": _container_states(pod),
    }


def cluster_pods_view(pods: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A RayCluster's Pods as a roll of them decides on them: each Pod's name, uid, node type, group, phase,
    readiness and whether it is being deleted (not its IP, containers or timestamps: a roll waits for
    Pods to go and come back Ready, nothing else)."""
    rows = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        status = pod.get("status") or {}
        ready = next(
            (c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None
        )
        rows.append(
            [
                str(metadata.get("name") or ""),
                str(metadata.get("uid") or ""),
                str(labels.get(LABEL_NODE_TYPE) or ""),
                str(labels.get(LABEL_RAY_GROUP) or ""),
                str(status.get("phase") or ""),
                str(ready or ""),
                _deleting(pod),
            ]
        )
    return {"pods": sorted(rows)}


def quiet_reads_after(quiet_reads: int, in_flight: int | None) -> int:
    """The run of zero in-flight readings after one more reading (None: no proxy answered): one longer for a
    zero, back to none otherwise. The drain decision counts it (decisions/rayservice/drain.py); the drain
    wait returns on the first reading that changes it."""
    return quiet_reads + 1 if in_flight == 0 else 0


def ray_container_terminated(pod: Mapping[str, Any] | None) -> bool:
    """The Ray container (the first one) is terminated: the head cannot serve (KubeRay's shouldDeletePod)."""
    if pod is None:
        return False
    containers = (pod.get("spec") or {}).get("containers") or []
    if len(containers) <= RAY_CONTAINER_INDEX:
        return False
    ray_name = containers[RAY_CONTAINER_INDEX].get("name")
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == ray_name:
            return "terminated" in (status.get("state") or {})
    return False


def serve_view(
    details: Mapping[str, Any] | None,
    head_pod: Mapping[str, Any] | None,
    head_serve_healthy: bool | None,
    check_head: bool,
) -> dict[str, Any]:
    """Serve as the RayService workflow decides on it: per application status and message, per deployment
    status, message, target and running replicas; the applied target capacity; the head Pod's identity
    and Ray container state and its Serve proxy health."""
    view: dict[str, Any] = {"reachable": details is not None}
    if details is not None:
        applications = {}
        for app_name, app in (details.get("applications") or {}).items():
            deployments = {
                name: {
                    "status": deployment.get("status"),
                    "message": deployment.get("message"),
                    "target": deployment.get("target_num_replicas"),
                    "running": sum(
                        1 for replica in deployment.get("replicas") or [] if replica.get("state") == "RUNNING"
                    ),
                }
                for name, deployment in (app.get("deployments") or {}).items()
            }
            applications[app_name] = {
                "status": app.get("status"),
                "message": app.get("message"),
                "deployments": deployments,
            }
        view["applications"] = applications
        view["target_capacity"] = details.get("target_capacity")
    if check_head:
        head = pod_view(head_pod)
        view["head"] = {key: head.get(key) for key in ("exists", "name", "uid", "podIP", "deleting")}
        view["head"]["ray_container_terminated"] = ray_container_terminated(head_pod)
        view["head_serve_healthy"] = head_serve_healthy
    return view


def condition_true(conditions: Sequence[Mapping[str, Any]] | None, condition_type: str) -> bool:
    """A Kubernetes JSON status' `conditions` hold `condition_type` with status "True"."""
    return any(c.get("type") == condition_type and c.get("status") == "True" for c in conditions or [])


def gateway_ready(gateway: Mapping[str, Any] | None) -> bool:
    """Accepted and Programmed, as KubeRay judges a Gateway (IsGatewayReady): the Gateway wait and the
    incremental upgrade's decisions judge it alike."""
    if not gateway:
        return False
    conditions = (gateway.get("status") or {}).get("conditions")
    return condition_true(conditions, "Accepted") and condition_true(conditions, "Programmed")


def gateway_view(
    gateway: Mapping[str, Any] | None, route: Mapping[str, Any] | None, ready: bool
) -> dict[str, Any]:
    view: dict[str, Any] = {"ready": ready}
    view["gateway"] = (
        {"exists": True, "conditions": _conditions((gateway.get("status") or {}).get("conditions"))}
        if gateway is not None
        else {"exists": False}
    )
    if route is not None:
        parents = (route.get("status") or {}).get("parents") or []
        view["route"] = {
            "exists": True,
            "parents": sorted(
                [str((p.get("parentRef") or {}).get("name") or ""), _conditions(p.get("conditions"))]
                for p in parents
            ),
        }
    else:
        view["route"] = {"exists": False}
    return view
