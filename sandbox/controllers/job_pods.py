"""Pure parts of the sandbox Job controller: attempt pods, Job conditions, back-off, Service DNS rewriting."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sandbox.controllers.raycluster_podstatus import now_rfc3339

_SERVICE_DNS_NAME = re.compile(
    r"(?<![A-Za-z0-9.-])([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)"
    r"\.svc(?:\.cluster\.local)?(?![A-Za-z0-9-]|\.[A-Za-z0-9])\.?"
)
# Where the pod's container log is (the sandbox has no kubelet log API; a log subresource could read this).
LOG_PATH_ANNOTATION = "sandbox.raypilot.io/log-path"


def rewrite_service_hosts(text: str, resolve: Callable[[str, str], str | None]) -> str:
    """Replace `<svc>.<ns>.svc[.cluster.local]` host names by `resolve(namespace, service)` when known."""

    def substitute(match: re.Match[str]) -> str:
        address = resolve(match.group(2), match.group(1))
        return address if address is not None else match.group(0)

    return _SERVICE_DNS_NAME.sub(substitute, text)


def backoff_delay(failures: int, base_s: float, cap_s: float) -> float:
    """Kubernetes' exponential pod-failure back-off (10 s, 20 s, 40 s... capped), scaled for the sandbox."""
    return 0.0 if failures <= 0 else min(base_s * 2 ** (failures - 1), cap_s)


def job_finished(status: Mapping[str, Any]) -> bool:
    return condition_true(status, "Complete") or condition_true(status, "Failed")


def job_finish_time(status: Mapping[str, Any]) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime"))
    return None


def condition_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def with_condition(status: Mapping[str, Any], kind: str, value: str, reason: str, message: str) -> list[Any]:
    """The conditions with `kind` set; an unchanged condition keeps its times (so a pass writes nothing)."""
    conditions = [dict(c) for c in status.get("conditions") or []]
    for condition in conditions:
        if condition.get("type") == kind:
            if (condition.get("status"), condition.get("reason"), condition.get("message")) != (
                value,
                reason,
                message,
            ):
                now = now_rfc3339()
                if condition.get("status") != value:
                    condition["lastTransitionTime"] = now
                condition.update(status=value, reason=reason, message=message, lastProbeTime=now)
            return conditions
    now = now_rfc3339()
    return [
        *conditions,
        {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastProbeTime": now,
            "lastTransitionTime": now,
        },
    ]


def attempt_pod(job: Mapping[str, Any], pod_name: str, log_path: Path) -> dict[str, Any]:
    """The pod object of one attempt: the Job's template, its generated labels, owned by the Job."""
    meta = job["metadata"]
    template = (job.get("spec") or {}).get("template") or {}
    template_meta = template.get("metadata") or {}
    labels = {
        **(template_meta.get("labels") or {}),
        "controller-uid": meta["uid"],
        "batch.kubernetes.io/controller-uid": meta["uid"],
        "job-name": meta["name"],
        "batch.kubernetes.io/job-name": meta["name"],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name,
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "annotations": {**(template_meta.get("annotations") or {}), LOG_PATH_ANNOTATION: str(log_path)},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {**(template.get("spec") or {}), "nodeName": "sandbox"},
        "status": {"phase": "Pending"},
    }
