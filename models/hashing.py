"""The RayCluster spec hash that decides between "update in place" and "create a new cluster".

KubeRay hashes the Go JSON of the spec with the fields the autoscaler or other controllers change
blanked out (GenerateHashWithoutReplicasAndWorkersToDelete) and stores it on the RayCluster as an
annotation. raypilot does the same over a canonical JSON of the pydantic model: sorted keys, CRD
defaults filled in, absent values, empty strings and empty maps/lists dropped (like Go's omitempty),
so writing a default explicitly or leaving it out gives the same hash. The digest is sha1 in base32 with the
"extended hex" alphabet, as KubeRay's GenerateJsonHash.

The hash is only ever compared with hashes raypilot wrote itself; it is not byte-compatible with a
hash KubeRay's Go code computed (Go orders fields by declaration, not by name).

A RayService's reconcile pass compares the same goal spec with its clusters several times, and every pass of
a spec generation does so again. Pruning the dumped spec is most of a hash's cost (0.2 ms, against 0.025 ms
for the spec's JSON dump), so hashes are remembered by that JSON text: the same content hashes once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from models.naming import (
    ANNOTATION_HASH,
    ANNOTATION_KUBERAY_VERSION,
    ANNOTATION_NUM_WORKER_GROUPS,
    KUBERAY_VERSION,
)
from models.raycluster import RayClusterSpec

__all__ = [
    "cluster_hash_annotations",
    "cluster_spec_hash",
    "is_cluster_spec_hash_equal",
    "json_hash",
]

# Worker-group fields the autoscaler (replicas, workersToDelete) or the user's scaling bounds change
# without requiring a new cluster.
_WORKER_GROUP_IGNORED = ("replicas", "minReplicas", "maxReplicas")
# Pod-template fields that Kueue and similar controllers inject after creation.
_POD_SPEC_IGNORED = ("tolerations", "schedulingGates")
# Cluster-level fields that never call for a new cluster: the RayCluster's own Pod upgrade strategy,
# and suspend, which Kueue owns after creation.
_SPEC_IGNORED = ("upgradeStrategy", "suspend")

_GO_ATOI = re.compile(r"[+-]?[0-9]+")


def json_hash(value: Any) -> str:
    """sha1 of the canonical JSON of `value`, encoded as base32 (extended hex alphabet)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha1(canonical.encode("utf-8"), usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode("ascii")


def _without_empty(value: Any) -> Any:
    if isinstance(value, dict):
        pruned = {key: _without_empty(item) for key, item in value.items()}
        return {key: item for key, item in pruned.items() if not _is_empty(item)}
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, dict | list) and not value)


def _pod_spec(group: dict[str, Any]) -> dict[str, Any]:
    template = group.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        spec: dict[str, Any] = template["spec"]
        return spec
    return {}


def _hashable_spec(dumped: dict[str, Any], worker_group_count: int | None) -> dict[str, Any]:
    for key in _SPEC_IGNORED:
        dumped.pop(key, None)
    head = dumped.get("headGroupSpec")
    if isinstance(head, dict):
        for key in _POD_SPEC_IGNORED:
            _pod_spec(head).pop(key, None)
    groups: list[dict[str, Any]] = list(dumped.get("workerGroupSpecs") or [])
    if worker_group_count is not None:
        groups = groups[:worker_group_count]
    for group in groups:
        for key in _WORKER_GROUP_IGNORED:
            group.pop(key, None)
        scale_strategy = group.get("scaleStrategy")
        if isinstance(scale_strategy, dict):
            scale_strategy.pop("workersToDelete", None)
        for key in _POD_SPEC_IGNORED:
            _pod_spec(group).pop(key, None)
    dumped["workerGroupSpecs"] = groups
    pruned: dict[str, Any] = _without_empty(dumped)
    return pruned


# A few specs per RayService are live at once (its goal, its clusters'); a worker holds many RayServices.
@lru_cache(maxsize=1024)
def _hash_of_spec_json(spec_json: str, worker_group_count: int | None) -> str:
    return json_hash(_hashable_spec(json.loads(spec_json), worker_group_count))


def cluster_spec_hash(spec: RayClusterSpec) -> str:
    """KubeRay's hash-without-replicas-and-workers-to-delete of a RayCluster spec.

    Ignores worker replicas/minReplicas/maxReplicas, scaleStrategy.workersToDelete, head and worker
    pod template tolerations and schedulingGates, spec.upgradeStrategy and spec.suspend.
    """
    return _hash_of_spec_json(spec.model_dump_json(by_alias=True), None)


def _truncated_spec_hash(spec: RayClusterSpec, worker_group_count: int) -> str:
    return _hash_of_spec_json(spec.model_dump_json(by_alias=True), worker_group_count)


def is_cluster_spec_hash_equal(
    goal: RayClusterSpec, cluster_annotations: Mapping[str, str], partial: bool
) -> bool:
    """Does the RayCluster carrying `cluster_annotations` already run `goal`? (isClusterSpecHashEqual)

    full: the cluster's hash annotation equals the goal's hash.
    partial: the goal with its worker groups cut to the cluster's ray.io/num-worker-groups matches,
    i.e. the goal only appends worker groups. An unparsable count answers True (as KubeRay); a goal
    with fewer groups than the cluster compares the cluster's hash with "" (so: False unless the
    cluster has no hash at all).
    """
    cluster_hash = cluster_annotations.get(ANNOTATION_HASH, "")
    if not partial:
        return cluster_hash == cluster_spec_hash(goal)
    raw_count = cluster_annotations.get(ANNOTATION_NUM_WORKER_GROUPS, "")
    if not _GO_ATOI.fullmatch(raw_count):
        return True
    cluster_group_count = int(raw_count)
    if cluster_group_count < 0:
        # KubeRay would panic slicing with a negative bound; treat it like an unreadable annotation.
        return True
    if len(goal.worker_group_specs) < cluster_group_count:
        return cluster_hash == ""
    return cluster_hash == _truncated_spec_hash(goal, cluster_group_count)


def cluster_hash_annotations(spec: RayClusterSpec) -> dict[str, str]:
    """Annotations written on a RayCluster at creation and at every in-place update."""
    return {
        ANNOTATION_HASH: cluster_spec_hash(spec),
        ANNOTATION_NUM_WORKER_GROUPS: str(len(spec.worker_group_specs)),
        ANNOTATION_KUBERAY_VERSION: KUBERAY_VERSION,
    }
