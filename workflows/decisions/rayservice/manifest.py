"""The desired RayService: its generation, the manifest checked as KubeRay would (at start and on `apply`),
the RayService at a generation with its status, and the upgrade strategy as the feature gates allow it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.features import FeatureGates
from models.manifest import ManifestError, parse_rayservice
from models.rayservice import RayService, RayServiceStatuses, RayServiceUpgradeType
from models.validation import validate_rayservice, validate_update


def next_generation(
    current_manifest: Mapping[str, Any], new_manifest: Mapping[str, Any], generation: int
) -> int:
    """metadata.generation after `apply`: it moves only when the spec changes (metadata edits such as a new
    annotation are applied without a new generation, as Kubernetes does)."""
    if current_manifest.get("spec") == new_manifest.get("spec"):
        return generation
    return generation + 1


def rayservice_at(manifest: Mapping[str, Any], generation: int, status: RayServiceStatuses) -> RayService:
    """The RayService object the KubeRay decisions take: the desired manifest, its generation and the
    workflow's status."""
    rayservice = parse_rayservice(manifest)
    rayservice.metadata.generation = generation
    rayservice.status = status
    return rayservice


def manifest_error(manifest: Mapping[str, Any], gates: FeatureGates) -> str | None:
    """Why KubeRay would reject this manifest as a new RayService (its message), or None."""
    try:
        rayservice = parse_rayservice(manifest)
    except ManifestError as error:
        return str(error)
    return validate_rayservice(rayservice, gates)


def manifest_update_error(
    current: Mapping[str, Any], new: Mapping[str, Any], gates: FeatureGates
) -> str | None:
    """Why `apply` must reject `new` in place of `current`: it does not parse, names another object, changes
    an immutable field, or fails validation (KubeRay's messages)."""
    try:
        replacement = parse_rayservice(new)
    except ManifestError as error:
        return str(error)
    try:
        existing = parse_rayservice(current)
    except ManifestError:
        return validate_rayservice(replacement, gates)
    return validate_update(existing, replacement, gates)


def with_gated_upgrade_strategy(rayservice: RayService, gates: FeatureGates) -> RayService:
    """raypilot: with the RayServiceIncrementalUpgrade gate off, NewClusterWithIncrementalUpgrade falls back
    to NewCluster (KubeRay then treats the type as "no zero-downtime upgrade" and ignores cluster changes)."""
    strategy = rayservice.spec.upgrade_strategy
    if (
        gates.ray_service_incremental_upgrade
        or strategy is None
        or strategy.type != RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
    ):
        return rayservice
    fallback = strategy.model_copy(update={"type": RayServiceUpgradeType.NEW_CLUSTER})
    spec = rayservice.spec.model_copy(update={"upgrade_strategy": fallback})
    return rayservice.model_copy(update={"spec": spec})
