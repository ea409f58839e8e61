"""Probes the test manifests set themselves, so a RayCluster on simulated Ray is Ready when its Ray is.

KubeRay adds its own probes to a Ray container that has none: the head's first readiness check comes 10 s
after it starts and then every 5 s, and a RayJob leaves Initializing only once every Pod is ready. Those
delays are sized for a real Ray head; simulated Ray answers within a second, so on a real kubelet (the real
stack's node agent) every RayJob test waited 10 s or more for nothing. A user may set their own probes, and
KubeRay keeps them: these check what KubeRay's do (the head's GCS through its dashboard, a node's raylet
through its dashboard agent). A startup probe checks every second until the container answers, then the
readiness probe goes on at KubeRay's 5 s: a readiness probe every second on every Pod of the suite cost the
node agent 70 s more CPU in a full run.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["HEAD_CHECK", "WORKER_CHECK", "with_quick_readiness"]

HEAD_CHECK = {"httpGet": {"path": "/api/gcs_healthz", "port": 8265}}
WORKER_CHECK = {"httpGet": {"path": "/api/local_raylet_healthz", "port": 52365}}
STARTUP_PERIOD_S = 1
STARTUP_WITHIN_S = 300  # then the kubelet restarts the container, as for any failed startup probe
READINESS_PERIOD_S = 5  # KubeRay's own


def with_quick_readiness(cluster_spec: dict[str, Any]) -> dict[str, Any]:
    """`cluster_spec` (a RayCluster's spec, changed in place and returned) with the probes above on the Ray
    container (the first) of the head and of every worker group, where the manifest set none."""
    head = cluster_spec.get("headGroupSpec")
    groups = [head] if head else []
    groups += cluster_spec.get("workerGroupSpecs") or []
    for group in groups:
        containers = group.get("template", {}).get("spec", {}).get("containers") or []
        if not containers or "readinessProbe" in containers[0] or "startupProbe" in containers[0]:
            continue
        check = HEAD_CHECK if group is head else WORKER_CHECK
        containers[0]["startupProbe"] = {
            **copy.deepcopy(check),
            "periodSeconds": STARTUP_PERIOD_S,
            "failureThreshold": STARTUP_WITHIN_S // STARTUP_PERIOD_S,
        }
        containers[0]["readinessProbe"] = {**copy.deepcopy(check), "periodSeconds": READINESS_PERIOD_S}
    return cluster_spec
