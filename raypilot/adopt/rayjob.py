"""Why a RayJob's KubeRay leftovers are not adopted, and how they are recognised (pure, table-tested).

After `kubectl delete rayjob.ray.io/NAME --cascade=orphan` KubeRay leaves the RayCluster labelled
`ray.io/originated-from-cr-name=NAME` (and, in K8sJobMode, its submitter Job). Taking that over honestly would
mean starting the RayJob's workflow in the middle of its life: attached to a Ray job whose submission id the
leftovers do not record (KubeRay kept it in the deleted RayJob's status), with a submitter raypilot did not
start. Starting from scratch instead would run the entrypoint a second time beside the first, on a second
cluster, and leave KubeRay's cluster behind. So raypilot refuses: the object says why, and it starts once
the leftovers are gone (deleted by the user, after the Ray job ended if it must finish).
"""

from __future__ import annotations

from typing import Any

from models.naming import CREATED_BY_RAYPILOT, KIND_RAYJOB, LABEL_CREATED_BY, ownership_label_selector


def rayjob_leftover_selector(name: str) -> str:
    """KubeRay's (and raypilot's) labels of what a RayJob created."""
    return ownership_label_selector(KIND_RAYJOB, name)


def kuberay_leftover_clusters(clusters: list[dict[str, Any]], owner_uid: str) -> list[str]:
    """Names of the labelled clusters that neither raypilot made nor the object owns."""
    names = []
    for cluster in clusters:
        meta = cluster.get("metadata") or {}
        made_by_raypilot = (meta.get("labels") or {}).get(LABEL_CREATED_BY) == CREATED_BY_RAYPILOT
        owned = any(owner.get("uid") == owner_uid for owner in meta.get("ownerReferences") or [])
        if not made_by_raypilot and not owned:
            names.append(str(meta.get("name")))
    return sorted(names)


def rayjob_adoption_refusal(namespace: str, name: str, leftovers: list[str]) -> str | None:
    """The message a RayJob gets while KubeRay's leftovers of it exist (None: nothing in the way)."""
    if not leftovers:
        return None
    return (
        f"raypilot does not adopt a RayJob: KubeRay's RayCluster {', '.join(leftovers)} of rayjob "
        f"{namespace}/{name} is still there (its Ray job's submission id is recorded nowhere raypilot can "
        "read, and starting afresh would run the entrypoint a second time). Wait for its Ray job to end if "
        "it must, then delete what KubeRay left (kubectl delete rayclusters.ray.io,jobs.batch -n "
        f"{namespace} -l {rayjob_leftover_selector(name)}); the RayJob starts once it is gone"
    )
