"""Validation of RayJob and RayService objects, with KubeRay's messages.

Every function returns the message of the first problem found (what KubeRay would report), or None.
Rules run in the order a real cluster applies them: the CRD's CEL rules (the API server rejects those
before KubeRay's controller sees the object), then KubeRay's controller checks
(ray-operator/controllers/ray/utils/validation.go), then what the RayCluster side would reject on
the cluster the object creates.

The per-kind rules live in validation_rayjob, validation_rayservice and validation_raycluster; this
module gathers the public names and adds the update rules (immutable fields).
"""

from __future__ import annotations

from models.features import FeatureGates
from models.raycluster import RayClusterSpec
from models.rayjob import RayJob
from models.rayservice import RayService
from models.validation.raycluster import (
    CEL_MANAGED_BY_IMMUTABLE,
    CEL_MANAGED_BY_VALUE,
    managed_by_value_error,
    validate_created_cluster,
    validate_raycluster_spec,
)
from models.validation.rayjob import (
    CEL_DELETION_CONDITION_BOTH,
    CEL_DELETION_CONDITION_NONE,
    CEL_DELETION_STRATEGY_INCOMPLETE,
    CEL_DELETION_STRATEGY_MIXED,
    validate_rayjob,
    validate_rayjob_metadata,
    validate_rayjob_spec,
    validate_rayjob_status,
)
from models.validation.rayservice import (
    initializing_timeout_seconds,
    is_incremental_upgrade_enabled,
    validate_cluster_upgrade_options,
    validate_rayservice,
    validate_rayservice_metadata,
    validate_rayservice_spec,
)

__all__ = [
    "CEL_DELETION_CONDITION_BOTH",
    "CEL_DELETION_CONDITION_NONE",
    "CEL_DELETION_STRATEGY_INCOMPLETE",
    "CEL_DELETION_STRATEGY_MIXED",
    "CEL_GCS_BACKEND_IMMUTABLE",
    "CEL_MANAGED_BY_IMMUTABLE",
    "CEL_MANAGED_BY_VALUE",
    "initializing_timeout_seconds",
    "is_incremental_upgrade_enabled",
    "managed_by_value_error",
    "validate",
    "validate_cluster_upgrade_options",
    "validate_created_cluster",
    "validate_managed_by_unchanged",
    "validate_raycluster_spec",
    "validate_rayjob",
    "validate_rayjob_metadata",
    "validate_rayjob_spec",
    "validate_rayjob_status",
    "validate_rayservice",
    "validate_rayservice_metadata",
    "validate_rayservice_spec",
    "validate_update",
]

CEL_GCS_BACKEND_IMMUTABLE = "gcsFaultToleranceOptions.backend is immutable"

_DEFAULT_GATES = FeatureGates()


def validate(obj: RayJob | RayService, gates: FeatureGates = _DEFAULT_GATES) -> str | None:
    """validate_rayjob or validate_rayservice, by the object's kind."""
    if isinstance(obj, RayJob):
        return validate_rayjob(obj, gates)
    return validate_rayservice(obj, gates)


def validate_managed_by_unchanged(old: str | None, new: str | None) -> str | None:
    """The CRD's transition rule `self == oldSelf` on managedBy.

    Kubernetes evaluates a transition rule only when the field exists in both the old and the new
    object, so setting managedBy where it was absent (or removing it) passes, as in KubeRay.
    """
    if old is not None and new is not None and old != new:
        return CEL_MANAGED_BY_IMMUTABLE
    return None


def _cluster_spec(obj: RayJob | RayService) -> RayClusterSpec | None:
    return obj.spec.ray_cluster_spec if isinstance(obj, RayJob) else obj.spec.ray_cluster_config


def _cluster_transition_error(old: RayClusterSpec | None, new: RayClusterSpec | None) -> str | None:
    if old is None or new is None:
        return None
    error = validate_managed_by_unchanged(old.managed_by, new.managed_by)
    old_ft, new_ft = old.gcs_fault_tolerance_options, new.gcs_fault_tolerance_options
    old_backend = old_ft.backend if old_ft is not None else None
    new_backend = new_ft.backend if new_ft is not None else None
    if error is None and old_backend is not None and new_backend is not None and old_backend != new_backend:
        error = CEL_GCS_BACKEND_IMMUTABLE
    return error


def validate_update(
    old: RayJob | RayService, new: RayJob | RayService, gates: FeatureGates = _DEFAULT_GATES
) -> str | None:
    """May `new` replace `old` (the `apply` update)? Identity first, then the CRD's transition rules
    (immutable fields), then the full validation of `new`."""
    if old.kind != new.kind:
        return f"kind is immutable: the object is a {old.kind}, the manifest is a {new.kind}"
    if old.metadata.namespace != new.metadata.namespace:
        return (
            f"metadata.namespace is immutable: the object is in {old.metadata.namespace!r}, "
            f"the manifest names {new.metadata.namespace!r}"
        )
    if old.metadata.name != new.metadata.name:
        return (
            f"metadata.name is immutable: the object is {old.metadata.name!r}, "
            f"the manifest names {new.metadata.name!r}"
        )
    error = validate_managed_by_unchanged(old.spec.managed_by, new.spec.managed_by)
    error = error or _cluster_transition_error(_cluster_spec(old), _cluster_spec(new))
    return error or validate(new, gates)
