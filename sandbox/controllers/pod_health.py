"""Whether a Ray pod must be deleted so that it can be recreated (KubeRay's shouldDeletePod).

Kubernetes aggregates container states into one pod phase: a pod stays `Running` while any container (a
logging or mesh sidecar, say) still runs, even when the Ray container itself has exited. KubeRay therefore
looks at the Ray container (the one named like `spec.containers[0]`, found by NAME because the order of
`status.containerStatuses` is not guaranteed) besides the phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TERMINAL_PHASES = frozenset({"Failed", "Succeeded"})


def ray_container_terminated_state(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `state.terminated` of the Ray container, or None when it has not terminated or is not reported."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    ray_container_name = containers[0].get("name")
    for container_status in (pod.get("status") or {}).get("containerStatuses") or []:
        if container_status.get("name") == ray_container_name:
            terminated = (container_status.get("state") or {}).get("terminated")
            return terminated if terminated is not None else None
    return None


def should_delete_pod(pod: Mapping[str, Any]) -> tuple[bool, str]:
    """Decide whether the RayCluster controller deletes this pod, with the reason it logs.

    - a pod in a terminal phase (Failed, Succeeded) never runs again: delete it;
    - a Running pod whose Ray container terminated is deleted only when restartPolicy is Never, because with
      Always or OnFailure the kubelet restarts the container in place;
    - anything else is left alone.
    """
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    node_type = labels.get("ray.io/node-type", "unknown")
    name = metadata.get("name", "")
    phase = (pod.get("status") or {}).get("phase", "")
    restart_policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"

    if phase in TERMINAL_PHASES:
        return True, (
            f"The {node_type} Pod {name} is in the terminal phase {phase}; it is deleted and a new Pod is "
            "created on a later pass if one is still needed."
        )
    if phase == "Running" and ray_container_terminated_state(pod) is not None:
        if restart_policy == "Never":
            return True, (
                f"The Ray container of the {node_type} Pod {name} has terminated and restartPolicy is Never, "
                "so it will not come back by itself; the Pod is deleted."
            )
        return False, (
            f"The Ray container of the {node_type} Pod {name} has terminated, but restartPolicy is "
            f"{restart_policy}, so the kubelet restarts it in place; the Pod is kept."
        )
    return False, f"The {node_type} Pod {name} (phase {phase or 'unknown'}) does not need to be deleted."
