"""Which RayCluster a RayService needs: update in place, prepare a new one, or leave alone; and its manifest.

KubeRay counterparts (rayservice_controller.go, utils/util.go):
- `is_zero_downtime_upgrade_enabled`: isZeroDowntimeUpgradeEnabled (spec type, else ENABLE_ZERO_DOWNTIME)
- `is_incremental_upgrade_enabled`: utils.IsIncrementalUpgradeEnabled
- `should_update_cluster`: shouldUpdateCluster (kuberay-version change, or worker groups appended)
- `should_prepare_new_cluster`: shouldPrepareNewCluster
- `rayservice_cluster_manifest`: constructRayClusterForRayService (+ replicas unset for the pending cluster
  of an incremental upgrade)
- `in_place_cluster_update`: modifyRayCluster (spec replaced, existing spec.suspend kept)
Hash equality is models.hashing.is_cluster_spec_hash_equal (isClusterSpecHashEqual).

Where raypilot differs, deliberately:
- With upgrade strategy None (or ENABLE_ZERO_DOWNTIME=false) KubeRay silently ignores a cluster change;
  raypilot leaves the cluster alone too but reports the change as not applied (strategy_none.py).
- `ServiceClusters.suppressed_goal_hash`: after the `abort` control the aborted spec must
  not start the same upgrade again the moment the rollback completes.
- The RayCluster gets no ownerReference to the RayService (the RayService is a workflow, not an object in the
  cluster); it carries raypilot's ownership labels and workflow-id annotation (contract section 5).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from models.base import dump_manifest
from models.hashing import cluster_hash_annotations, cluster_spec_hash, is_cluster_spec_hash_equal
from models.meta import is_condition_true
from models.naming import (
    ANNOTATION_KUBERAY_VERSION,
    KIND_RAYSERVICE,
    KUBERAY_VERSION,
    ownership_labels,
    workflow_annotations,
    workflow_id,
)
from models.operator import OperatorConfig
from models.raycluster import RAY_API_VERSION, RayCluster
from models.rayservice import (
    ClusterUpgradeOptions,
    RayService,
    RayServiceConditionType,
    RayServiceSpec,
    RayServiceUpgradeStrategy,
    RayServiceUpgradeType,
)
from models.validation.rayservice import is_incremental_upgrade_enabled as incremental_upgrade_requested

__all__ = [
    "InPlaceUpdate",
    "ServiceClusters",
    "cluster_upgrade_options",
    "goal_cluster_hash",
    "in_place_cluster_update",
    "in_place_update_request",
    "is_incremental_upgrade_enabled",
    "is_zero_downtime_upgrade_enabled",
    "rayservice_cluster_manifest",
    "should_prepare_new_cluster",
    "should_update_cluster",
]


def is_zero_downtime_upgrade_enabled(
    strategy: RayServiceUpgradeStrategy | None, config: OperatorConfig
) -> bool:
    """Does a cluster change get a new cluster? `upgradeStrategy.type` wins; unset -> ENABLE_ZERO_DOWNTIME.

    With the RayServiceIncrementalUpgrade gate off, NewClusterWithIncrementalUpgrade counts as "no new
    cluster".
    """
    if strategy is not None and strategy.type is not None:
        allowed: tuple[str, ...] = (RayServiceUpgradeType.NEW_CLUSTER,)
        if config.feature_gates.ray_service_incremental_upgrade:
            allowed += (RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE,)
        return strategy.type in allowed
    return config.enable_zero_downtime


def is_incremental_upgrade_enabled(spec: RayServiceSpec, config: OperatorConfig) -> bool:
    """Gate RayServiceIncrementalUpgrade on and type NewClusterWithIncrementalUpgrade."""
    return incremental_upgrade_requested(spec, config.feature_gates)


def cluster_upgrade_options(spec: RayServiceSpec) -> ClusterUpgradeOptions | None:
    """GetRayServiceClusterUpgradeOptions."""
    return spec.upgrade_strategy.cluster_upgrade_options if spec.upgrade_strategy is not None else None


def goal_cluster_hash(spec: RayServiceSpec) -> str:
    """Hash of the cluster the spec asks for (rayClusterSpecForHashing: suspend is not part of it)."""
    return cluster_spec_hash(spec.ray_cluster_config)


def _annotations(cluster: RayCluster) -> Mapping[str, str]:
    return cluster.metadata.annotations


def should_update_cluster(rayservice: RayService, cluster: RayCluster | None, is_active: bool) -> bool:
    """shouldUpdateCluster: update this RayCluster in place?

    Never the active cluster while an upgrade is in progress. A RayCluster written by another KubeRay version
    is updated (even when the spec also changed). Otherwise only when the goal merely appends worker groups.
    """
    if cluster is None:
        return False
    if is_active:
        if is_condition_true(rayservice.status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS):
            return False
        if _annotations(cluster).get(ANNOTATION_KUBERAY_VERSION) != KUBERAY_VERSION:
            return True
    goal = rayservice.spec.ray_cluster_config
    if is_cluster_spec_hash_equal(goal, _annotations(cluster), partial=False):
        return False
    return is_cluster_spec_hash_equal(goal, _annotations(cluster), partial=True)


@dataclass(frozen=True)
class ServiceClusters:
    """A RayService with its active and pending RayClusters, for `should_prepare_new_cluster`.

    `pending_serving`: the pending cluster just became the one serving. `suppressed_goal_hash` (raypilot):
    the hash of a goal the user aborted.
    """

    rayservice: RayService
    active: RayCluster | None
    pending: RayCluster | None
    pending_serving: bool
    config: OperatorConfig
    suppressed_goal_hash: str | None = None


def should_prepare_new_cluster(clusters: ServiceClusters) -> bool:
    """shouldPrepareNewCluster: choose a new pending cluster name now?

    Not while the pending cluster just became the one serving, nor during a rollback. Yes when there is no
    cluster at all. Otherwise compare the goal with the pending cluster (or the active one when none): a
    different spec that does not merely append worker groups needs a new cluster when zero-downtime upgrades
    are enabled. A goal the user aborted (`suppressed_goal_hash`) does not start again.
    """
    rayservice, active, pending = clusters.rayservice, clusters.active, clusters.pending
    suppressed_goal_hash = clusters.suppressed_goal_hash
    if clusters.pending_serving:
        return False
    if is_condition_true(rayservice.status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS):
        return False
    cluster = pending if pending is not None else active
    if cluster is None:
        # Neither cluster exists: the RayService was just created.
        return True
    goal = rayservice.spec.ray_cluster_config
    if is_cluster_spec_hash_equal(goal, _annotations(cluster), partial=False):
        return False
    if is_cluster_spec_hash_equal(goal, _annotations(cluster), partial=True):
        return False
    if suppressed_goal_hash is not None and goal_cluster_hash(rayservice.spec) == suppressed_goal_hash:
        return False
    return is_zero_downtime_upgrade_enabled(rayservice.spec.upgrade_strategy, clusters.config)


def rayservice_cluster_manifest(
    rayservice: RayService, cluster_name: str, config: OperatorConfig
) -> dict[str, Any]:
    """constructRayClusterForRayService as a Kubernetes JSON object.

    Labels: the RayService's labels, then raypilot's ownership labels. Annotations: the RayService's, then the
    spec hash, number of worker groups, KubeRay version and the workflow id. The pending cluster of an
    incremental upgrade (an active cluster already exists) leaves every worker group's `replicas` unset, so
    the autoscaler starts from minReplicas and grows with target_capacity.
    """
    name = rayservice.metadata.name
    labels = {**rayservice.metadata.labels, **ownership_labels(KIND_RAYSERVICE, name)}
    annotations = {
        **rayservice.metadata.annotations,
        **cluster_hash_annotations(rayservice.spec.ray_cluster_config),
        **workflow_annotations(workflow_id(KIND_RAYSERVICE, rayservice.metadata.namespace, name)),
    }
    spec = dump_manifest(rayservice.spec.ray_cluster_config)
    is_pending_for_upgrade = (
        is_incremental_upgrade_enabled(rayservice.spec, config)
        and rayservice.status.active_service_status.ray_cluster_name != ""
    )
    if is_pending_for_upgrade:
        for group in spec.get("workerGroupSpecs") or []:
            group.pop("replicas", None)
    return {
        "apiVersion": RAY_API_VERSION,
        "kind": "RayCluster",
        "metadata": {
            "name": cluster_name,
            "namespace": rayservice.metadata.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


def in_place_cluster_update(current: Mapping[str, Any], goal: Mapping[str, Any]) -> dict[str, Any]:
    """modifyRayCluster: the existing RayCluster object (as read, resourceVersion included) with the goal's
    spec, labels and annotations. The existing `spec.suspend` is kept: after creation Kueue owns it."""
    current_meta = current.get("metadata") or {}
    goal_meta = goal.get("metadata") or {}
    if (current_meta.get("name"), current_meta.get("namespace")) != (
        goal_meta.get("name"),
        goal_meta.get("namespace"),
    ):
        raise ValueError(
            "currentCluster and goalCluster have different names or namespaces: "
            f"{current_meta.get('namespace')}/{current_meta.get('name')} != "
            f"{goal_meta.get('namespace')}/{goal_meta.get('name')}"
        )
    updated = copy.deepcopy(dict(current))
    spec = copy.deepcopy(dict(goal.get("spec") or {}))
    existing_suspend = (current.get("spec") or {}).get("suspend")
    spec.pop("suspend", None)
    if existing_suspend is not None:
        spec["suspend"] = existing_suspend
    updated["spec"] = spec
    metadata = dict(updated.get("metadata") or {})
    metadata["labels"] = dict(goal_meta.get("labels") or {})
    metadata["annotations"] = dict(goal_meta.get("annotations") or {})
    updated["metadata"] = metadata
    return updated


@dataclass(frozen=True)
class InPlaceUpdate:
    """An UpdateSpec's content: the new spec, and label/annotation changes (None removes a key)."""

    spec: dict[str, Any]
    labels: dict[str, str | None]
    annotations: dict[str, str | None]


def _string_map_changes(current: Mapping[str, str], goal: Mapping[str, str]) -> dict[str, str | None]:
    changes: dict[str, str | None] = {key: None for key in current if key not in goal}
    changes.update({key: value for key, value in goal.items() if current.get(key) != value})
    return changes


def in_place_update_request(current: Mapping[str, Any], goal: Mapping[str, Any]) -> InPlaceUpdate:
    """modifyRayCluster phrased as a spec replacement plus metadata changes: the goal's spec (the existing
    spec.suspend kept), labels and annotations replaced."""
    updated = in_place_cluster_update(current, goal)
    current_meta = current.get("metadata") or {}
    updated_meta = updated["metadata"]
    return InPlaceUpdate(
        spec=updated["spec"],
        labels=_string_map_changes(current_meta.get("labels") or {}, updated_meta["labels"]),
        annotations=_string_map_changes(current_meta.get("annotations") or {}, updated_meta["annotations"]),
    )
