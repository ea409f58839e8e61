"""Pod status shapes the sandbox's kubelet stand-ins write (shared by the RayCluster and Job controllers)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_since(timestamp: str) -> float:
    """Seconds elapsed since an RFC 3339 timestamp as Kubernetes writes them (second precision)."""
    parsed = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (datetime.now(UTC) - parsed).total_seconds()


def container_running_status(
    name: str, started_at: str, *, ready: bool = True, restarts: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "started": True,
        "restartCount": restarts,
        "image": "",
        "imageID": "",
        "state": {"running": {"startedAt": started_at}},
    }


def container_terminated_status(
    name: str, exit_code: int, reason: str, started_at: str, message: str = "", *, restarts: int = 0
) -> dict[str, Any]:
    terminated: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": started_at,
        "finishedAt": now_rfc3339(),
    }
    if message:
        terminated["message"] = message
    return {
        "name": name,
        "ready": False,
        "started": False,
        "restartCount": restarts,
        "image": "",
        "imageID": "",
        "state": {"terminated": terminated},
    }


def container_waiting_status(
    name: str, message: str, reason: str = "CreateContainerConfigError"
) -> dict[str, Any]:
    return {
        "name": name,
        "ready": False,
        "started": False,
        "restartCount": 0,
        "image": "",
        "imageID": "",
        "state": {"waiting": {"reason": reason, "message": message}},
    }


def pod_conditions(
    ready: bool, previous: list[dict[str, Any]] | None = None, not_ready_reason: str = "ContainersNotReady"
) -> list[dict[str, Any]]:
    """PodScheduled/Initialized always True, ContainersReady/Ready as given; transition times kept when the
    status did not change."""
    before = {c.get("type"): c for c in previous or []}
    now = now_rfc3339()
    conditions = []
    for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
        value = "True" if kind in ("PodScheduled", "Initialized") or ready else "False"
        old = before.get(kind)
        since = old.get("lastTransitionTime", now) if old is not None and old.get("status") == value else now
        condition: dict[str, Any] = {"type": kind, "status": value, "lastTransitionTime": since}
        if value == "False":
            condition["reason"] = not_ready_reason
        conditions.append(condition)
    return conditions
