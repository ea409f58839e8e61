"""What the kubelet would report for Ray pods in the sandbox: running heads, crashed Ray containers."""

from __future__ import annotations

from typing import Any

from sandbox.controllers.raycluster_podstatus import (
    container_running_status,
    container_terminated_status,
    now_rfc3339,
    pod_conditions,
)
from sandbox.store import Store


def update_pod_status(store: Store, pod: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Merge `fields` into the pod's current status (no-op if the pod is gone); returns the pod."""
    meta = pod["metadata"]
    current = store.try_get("v1", "Pod", meta.get("namespace"), meta["name"])
    if current is None or current["metadata"]["uid"] != meta.get("uid", current["metadata"]["uid"]):
        return pod
    status = dict(current.get("status") or {})
    status.setdefault("hostIP", "127.0.0.1")
    status.setdefault("startTime", now_rfc3339())
    status.update(fields)
    current["status"] = status
    return store.update("v1", "Pod", current, status=True)


def _other_container_statuses(pod: dict[str, Any], started_at: str) -> list[dict[str, Any]]:
    """The statuses of the containers after the Ray one: as already reported (raycluster_sidecars runs those
    with a command), else running (image-only sidecars are taken to run)."""
    reported = {s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses") or []}
    return [
        reported.get(c["name"]) or container_running_status(c["name"], started_at)
        for c in pod["spec"]["containers"][1:]
    ]


def set_running(store: Store, pod: dict[str, Any], pod_ip: str, *, restarts: int = 0) -> dict[str, Any]:
    """The Ray container running and ready; the other containers as reported (running if not yet)."""
    started_at = now_rfc3339()
    current = store.try_get("v1", "Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"]) or pod
    statuses = [
        container_running_status(pod["spec"]["containers"][0]["name"], started_at, restarts=restarts),
        *_other_container_statuses(current, started_at),
    ]
    return update_pod_status(
        store,
        pod,
        phase="Running",
        podIP=pod_ip,
        podIPs=[{"ip": pod_ip}],
        containerStatuses=statuses,
        conditions=pod_conditions(
            all(s.get("ready") for s in statuses), (current.get("status") or {}).get("conditions")
        ),
    )


def running_worker_status(pod: dict[str, Any], pod_ip: str) -> dict[str, Any]:
    """The status a worker pod is created with: it has no process to wait for."""
    started_at = now_rfc3339()
    return {
        "phase": "Running",
        "hostIP": "127.0.0.1",
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": started_at,
        "conditions": pod_conditions(True),
        "containerStatuses": [
            container_running_status(c["name"], started_at) for c in pod["spec"]["containers"]
        ],
    }


def mark_ray_container_terminated(
    store: Store,
    pod: dict[str, Any],
    code: int,
    reason: str,
    message: str,
    *,
    restarts: int = 0,
    force_failed: bool = False,
) -> dict[str, Any]:
    """The Ray container exited; sidecars keep their state. With restartPolicy Never and no other container
    still running the pod is Failed; otherwise it stays Running (the kubelet restarts the container in place,
    here only when told to by the start_dashboard fault hook). `force_failed` is for a Ray that never came
    up at all."""
    containers = pod["spec"]["containers"]
    started = ((pod.get("status") or {}).get("startTime")) or now_rfc3339()
    statuses = [
        container_terminated_status(containers[0]["name"], code, reason, started, message, restarts=restarts)
    ]
    current = store.try_get("v1", "Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"]) or pod
    statuses += _other_container_statuses(current, started)
    never = pod["spec"].get("restartPolicy") == "Never"
    others_done = all("terminated" in (s.get("state") or {}) for s in statuses[1:])
    phase = "Failed" if force_failed or (never and others_done) else "Running"
    return update_pod_status(
        store,
        pod,
        phase=phase,
        containerStatuses=statuses,
        conditions=pod_conditions(False, (pod.get("status") or {}).get("conditions")),
    )
