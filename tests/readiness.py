"""Readiness probes the test manifests set themselves, so a RayCluster is Ready when its Ray is.

KubeRay adds its own probes to a Ray container that has none: the head's first readiness check comes 10 s
after it starts and then every 5 s, and a RayJob leaves Initializing only once every Pod is ready. Those
delays are sized for a real Ray head; simulated Ray answers within a second, so on a real kubelet (the real
stack's node agent) every RayJob test waited 10 s or more for nothing. A user may set their own probes, and
KubeRay keeps them: these check what KubeRay's do (the head's GCS through its dashboard, a node's raylet
through its dashboard agent), every second from the start.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["HEAD_READINESS", "WORKER_READINESS", "with_quick_readiness"]

HEAD_READINESS = {"httpGet": {"path": "/api/gcs_healthz", "port": 8265}, "periodSeconds": 1}
WORKER_READINESS = {"httpGet": {"path": "/api/local_raylet_healthz", "port": 52365}, "periodSeconds": 1}


def with_quick_readiness(cluster_spec: dict[str, Any]) -> dict[str, Any]:
    """`cluster_spec` (a RayCluster's spec, changed in place and returned) with the probes above on the Ray
    container (the first) of the head and of every worker group, where the manifest set none."""
    head = cluster_spec.get("headGroupSpec")
    groups = [head] if head else []
    groups += cluster_spec.get("workerGroupSpecs") or []
    for group in groups:
        containers = group.get("template", {}).get("spec", {}).get("containers") or []
        if containers:
            probe = HEAD_READINESS if group is head else WORKER_READINESS
            containers[0].setdefault("readinessProbe", copy.deepcopy(probe))
    return cluster_spec
