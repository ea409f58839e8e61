"""A RayJob or RayService manifest checked as `raypilot apply` checks it before starting anything: KubeRay's
validation (its messages, naming the field) and raypilot's annotations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.features import FeatureGates
from models.manifest import ManifestError, parse_manifest
from models.meta import DEFAULT_NAMESPACE
from models.naming import ObjectRef
from models.rayjob import RayJob
from models.validation import validate
from workflows.decisions.rayjob.annotations import raypilot_annotation_problem

__all__ = ["checked_ray_manifest"]


def checked_ray_manifest(manifest: Mapping[str, Any], gates: FeatureGates) -> ObjectRef:
    """The object a valid RayJob or RayService manifest names; ManifestError with KubeRay's message when
    KubeRay (or a `raypilot.io/` annotation's rule) rejects it."""
    parsed = parse_manifest(manifest)
    message = validate(parsed, gates)
    if message is None and isinstance(parsed, RayJob):
        # raypilot.io/ annotations (cleanup-after, retry-policy): rejected here as the workflow would.
        message = raypilot_annotation_problem(parsed)
    if message is not None:
        raise ManifestError(message)
    return ObjectRef(parsed.kind, parsed.metadata.namespace or DEFAULT_NAMESPACE, parsed.metadata.name)
