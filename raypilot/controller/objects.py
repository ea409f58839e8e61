"""A raypilot.io object as the controller reads it: its view for the decisions, the `ray.io/v1` manifest its
workflow takes, KubeRay's validation, and the status that reports a rejected spec (pure)."""

from __future__ import annotations

from typing import Any

from models.features import FeatureGates
from models.manifest import ManifestError, parse_manifest
from models.naming import KIND_RAYJOB, KIND_RAYSERVICE, ObjectRef, RayKind
from models.raycluster import RAY_API_VERSION
from models.rayjob import RayJob
from models.source import ANNOTATION_OBJECT_API_VERSION, RAYPILOT_API_VERSION
from models.validation import validate
from raypilot.controller.decide import ANNOTATION_APPLIED_GENERATION, FINALIZER, ORPHAN_FINALIZER, ObjectView
from workflows.decisions.rayjob.annotations import raypilot_annotation_problem


def object_ref(obj: dict[str, Any]) -> ObjectRef:
    meta = obj["metadata"]
    kind: RayKind = KIND_RAYJOB if obj["kind"] == KIND_RAYJOB else KIND_RAYSERVICE
    return ObjectRef(kind, str(meta.get("namespace") or "default"), str(meta["name"]))


def object_view(obj: dict[str, Any]) -> ObjectView:
    meta = obj["metadata"]
    uid = str(meta.get("uid") or "")
    return ObjectView(
        kind=str(obj["kind"]),
        uid=uid,
        generation=int(meta.get("generation") or 1),
        applied_generation=applied_generation(meta.get("annotations") or {}, uid),
        deleting=bool(meta.get("deletionTimestamp")),
        has_finalizer=FINALIZER in (meta.get("finalizers") or []),
        orphaning=ORPHAN_FINALIZER in (meta.get("finalizers") or []),
    )


def applied_generation(annotations: dict[str, str], uid: str) -> int:
    """The generation the controller handed to this object's workflow (0: none; another object's: none)."""
    recorded_uid, _, generation = str(annotations.get(ANNOTATION_APPLIED_GENERATION, "")).rpartition("/")
    return int(generation) if recorded_uid == uid and generation.isdigit() else 0


def workflow_manifest(obj: dict[str, Any]) -> dict[str, Any]:
    """The `ray.io/v1` manifest of the object (only `apiVersion` differs, as a KubeRay manifest moves over),
    with its uid and generation, and the annotation that names its API for Events and ownerReferences. The
    controller's own bookkeeping annotation is left out: it is not part of the user's object."""
    meta = obj["metadata"]
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k != ANNOTATION_APPLIED_GENERATION
    }
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    annotations[ANNOTATION_OBJECT_API_VERSION] = RAYPILOT_API_VERSION
    metadata: dict[str, Any] = {
        "name": meta["name"],
        "namespace": meta.get("namespace") or "default",
        "annotations": annotations,
        "uid": meta.get("uid"),
        "generation": meta.get("generation") or 1,
    }
    if meta.get("labels"):
        metadata["labels"] = dict(meta["labels"])
    return {
        "apiVersion": RAY_API_VERSION,
        "kind": obj["kind"],
        "metadata": metadata,
        "spec": obj.get("spec") or {},
    }


def validation_message(manifest: dict[str, Any], gates: FeatureGates) -> str | None:
    """KubeRay's message for a spec it would reject, then raypilot's for a raypilot.io/ annotation it cannot
    use (as `raypilot apply` and the workflow reject them), None for a valid one."""
    try:
        parsed = parse_manifest(manifest)
    except ManifestError as error:
        return str(error)
    message = validate(parsed, gates)
    if message is None and isinstance(parsed, RayJob):
        message = raypilot_annotation_problem(parsed)
    return message


def validation_failed_status(kind: str, message: str, generation: int, now: str) -> dict[str, Any]:
    """What KubeRay writes for a rejected spec: a RayJob's ValidationFailed deployment status and reason, a
    RayService's Ready condition False with reason ValidationFailed."""
    if kind == "RayJob":
        return {
            "jobDeploymentStatus": "ValidationFailed",
            "reason": "ValidationFailed",
            "message": message,
            "observedGeneration": generation,
        }
    condition = {
        "type": "Ready",
        "status": "False",
        "reason": "ValidationFailed",
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now,
    }
    return {"conditions": [condition], "observedGeneration": generation}
