"""Which API a RayJob/RayService manifest came from: KubeRay's `ray.io/v1` or raypilot's own `raypilot.io/v1`.

The workflows take every manifest as `ray.io/v1` (CONTRACT section 3). `raypilot controller` hands over a
`raypilot.io/v1` object as such a manifest, keeping its uid and naming its API in an annotation, so that
Events and ownerReferences point at the object that really exists: an ownerReference whose apiVersion/kind
does not match the owner's uid makes Kubernetes' garbage collector treat the owner as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from models.raycluster import RAY_API_VERSION

RAYPILOT_API_VERSION: Final = "raypilot.io/v1"
ANNOTATION_OBJECT_API_VERSION: Final = "raypilot.io/object-api-version"
# On a RayService manifest: the RayCluster KubeRay left (adopted by `raypilot adopt` or the controller) that
# the first run takes as its active cluster instead of creating one.
ANNOTATION_ADOPTED_CLUSTER: Final = "raypilot.io/adopted-cluster"


def object_api_version(annotations: Mapping[str, str]) -> str:
    """The apiVersion of the object a manifest stands for (`ray.io/v1` unless the controller says so)."""
    if annotations.get(ANNOTATION_OBJECT_API_VERSION) == RAYPILOT_API_VERSION:
        return RAYPILOT_API_VERSION
    return RAY_API_VERSION


def adopted_cluster(annotations: Mapping[str, str]) -> str:
    """The adopted RayCluster a RayService's first run starts from ("" for none)."""
    return str(annotations.get(ANNOTATION_ADOPTED_CLUSTER) or "")
