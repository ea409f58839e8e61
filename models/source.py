"""Which API a RayJob/RayService manifest came from: KubeRay's `ray.io/v1` or raypilot's own `raypilot.io/v1`.

The workflows take every manifest as `ray.io/v1` (docs/contract.md §3). `raypilot controller` hands over a
`raypilot.io/v1` object as such a manifest, keeping its uid and naming its API in an annotation, so that
Events and ownerReferences point at the object that really exists: an ownerReference whose apiVersion/kind
does not match the owner's uid makes Kubernetes' garbage collector treat the owner as absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from models.raycluster import RAY_API_VERSION

RAYPILOT_API_VERSION: Final = "raypilot.io/v1"
ANNOTATION_OBJECT_API_VERSION: Final = "raypilot.io/object-api-version"
# On a RayService manifest: the RayCluster KubeRay left (adopted by `raypilot adopt` or the controller) that
# the first run takes as its active cluster instead of creating one.
ANNOTATION_ADOPTED_CLUSTER: Final = "raypilot.io/adopted-cluster"
# On a RayJob manifest: what KubeRay left of it, adopted by `raypilot adopt` or the controller (JSON,
# `AdoptedRayJob`); the first attempt continues from there instead of creating and submitting anew.
ANNOTATION_ADOPTED_RAYJOB: Final = "raypilot.io/adopted-rayjob"


def object_api_version(annotations: Mapping[str, str]) -> str:
    """The apiVersion of the object a manifest stands for (`ray.io/v1` unless the controller says so)."""
    if annotations.get(ANNOTATION_OBJECT_API_VERSION) == RAYPILOT_API_VERSION:
        return RAYPILOT_API_VERSION
    return RAY_API_VERSION


def adopted_cluster(annotations: Mapping[str, str]) -> str:
    """The adopted RayCluster a RayService's first run starts from ("" for none)."""
    return str(annotations.get(ANNOTATION_ADOPTED_CLUSTER) or "")


@dataclass(frozen=True)
class AdoptedRayJob:
    """What a RayJob's first attempt takes over from KubeRay: its RayCluster ("" in clusterSelector mode),
    its Ray job's submission id ("" when none was submitted yet), whether the K8sJobMode submitter Job and
    the RayJob's head Service exist, when KubeRay started the attempt (RFC 3339, "" unknown), and whether
    the submission id is to be looked up on the cluster's dashboard (HTTPMode: KubeRay generated it)."""

    cluster: str = ""
    job_id: str = ""
    submitter: bool = False
    head_service: bool = False
    start_time: str = ""
    lookup: bool = False

    def annotation(self) -> str:
        return json.dumps(
            {
                "cluster": self.cluster,
                "jobId": self.job_id,
                "submitter": self.submitter,
                "headService": self.head_service,
                "startTime": self.start_time,
                "lookup": self.lookup,
            },
            sort_keys=True,
        )


def adopted_rayjob(annotations: Mapping[str, str]) -> AdoptedRayJob | None:
    """The adoption a RayJob manifest carries; None without one, or when it does not parse (the RayJob then
    starts as a new one would)."""
    text = annotations.get(ANNOTATION_ADOPTED_RAYJOB)
    if not text:
        return None
    try:
        loaded: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(loaded, dict):
        return None
    texts = {key: loaded.get(key, "") for key in ("cluster", "jobId", "startTime")}
    flags = {key: loaded.get(key, False) for key in ("submitter", "headService", "lookup")}
    if not all(isinstance(v, str) for v in texts.values()) or not all(
        isinstance(v, bool) for v in flags.values()
    ):
        return None
    return AdoptedRayJob(
        cluster=texts["cluster"],
        job_id=texts["jobId"],
        submitter=flags["submitter"],
        head_service=flags["headService"],
        start_time=texts["startTime"],
        lookup=flags["lookup"],
    )
