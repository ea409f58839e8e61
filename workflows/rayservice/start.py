"""What a RayService run starts from, read off its manifest: the RayService's namespace and name, the object
its Events point at, and (for a RayService moved over from KubeRay) the cluster it adopts.
"""

from __future__ import annotations

from typing import Any

from models.naming import KIND_RAYSERVICE
from models.source import adopted_cluster, object_api_version
from wire.kubernetes import InvolvedObject
from workflows.rayservice.state import RayServiceState


def manifest_namespace_and_name(manifest: dict[str, Any]) -> tuple[str, str]:
    metadata = manifest.get("metadata") or {}
    return str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")


def involved_object(manifest: dict[str, Any]) -> InvolvedObject:
    """The object Events point at: a raypilot.io object (its uid and API) when the controller applied it."""
    metadata = manifest.get("metadata") or {}
    namespace, name = manifest_namespace_and_name(manifest)
    annotations = metadata.get("annotations") or {}
    return InvolvedObject(
        KIND_RAYSERVICE,
        name,
        namespace,
        uid=str(metadata.get("uid") or ""),
        api_version=object_api_version(annotations if isinstance(annotations, dict) else {}),
    )


def start_from_adopted_cluster(state: RayServiceState) -> None:
    """A RayService moved over from KubeRay (raypilot.adopt): its first run takes the cluster KubeRay left as
    its active cluster, already serving and selected by its Services, instead of creating one. Only manifests
    with the annotation take this path, so runs already in flight replay unchanged."""
    annotations = (state.manifest.get("metadata") or {}).get("annotations") or {}
    name = adopted_cluster(annotations if isinstance(annotations, dict) else {})
    if not name or state.owned_clusters or state.status.active_service_status.ray_cluster_name:
        return
    state.status.active_service_status.ray_cluster_name = name
    state.owned_clusters.append(name)
    state.services_cluster = name
