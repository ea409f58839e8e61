"""What `raypilot apply` does with each document of its input, decided before anything is applied (pure).

A RayJob or RayService becomes a workflow; a RayCronJob a Temporal Schedule; every
other object goes to Kubernetes as `kubectl apply` would send it. A document with `metadata.generateName` and
no name gets its name here, as the API server picks one for `kubectl create`: the prefix, cut to leave room,
plus 5 random characters of Kubernetes' alphabet.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from models.features import FeatureGates
from models.manifest import ManifestError, parse_raycronjob
from models.meta import DEFAULT_NAMESPACE
from models.naming import DNS1035_LABEL_MAX_LENGTH, SUFFIX_LENGTH, ObjectRef, random_suffix
from models.validation.raycronjob import validate_raycronjob
from raypilot.runs.manifest import checked_ray_manifest

# Kubernetes' names.SimpleNameGenerator keeps at most this much of a generateName prefix (63 - 5).
MAX_GENERATE_NAME_PREFIX: Final = DNS1035_LABEL_MAX_LENGTH - SUFFIX_LENGTH
RAY_GROUP: Final = "ray.io"
WORKFLOW_KINDS: Final = ("RayJob", "RayService")
SCHEDULE_KINDS: Final = ("RayCronJob",)


@dataclass(frozen=True)
class RayDocument:
    """A RayJob or RayService for its workflow, validated as KubeRay would."""

    origin: str
    ref: ObjectRef
    manifest: dict[str, Any]


@dataclass(frozen=True)
class KubeDocument:
    """Any other object, for the Kubernetes API. `name` is None when the API server is to pick it
    (`generateName`); `namespace` is where it goes if its kind turns out to be namespaced."""

    origin: str
    api_version: str
    kind: str
    namespace: str
    name: str | None
    body: dict[str, Any]


@dataclass(frozen=True)
class CronDocument:
    """A RayCronJob for its Temporal Schedule, validated as KubeRay would."""

    origin: str
    namespace: str
    name: str
    manifest: dict[str, Any]


PlannedDocument = RayDocument | KubeDocument | CronDocument


def name_from_generate_name(prefix: str, rand: random.Random) -> str:
    """The name the API server would give an object with `metadata.generateName: prefix`."""
    return prefix[:MAX_GENERATE_NAME_PREFIX] + random_suffix(rand)


def goes_to_raypilot(api_version: object, kind: object) -> bool:
    """Whether raypilot itself takes the object (a workflow or schedule) instead of the Kubernetes API:
    KubeRay's RayJob, RayService and RayCronJob, whatever version is written (a wrong one is rejected with
    KubeRay's expectation rather than sent to the cluster)."""
    group = str(api_version).split("/", 1)[0] if "/" in str(api_version) else ""
    return group == RAY_GROUP and kind in (*WORKFLOW_KINDS, *SCHEDULE_KINDS)


def with_generated_name(document: Mapping[str, Any], rand: random.Random) -> dict[str, Any]:
    """The document, with a name picked from `metadata.generateName` when it has no name."""
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("name"):
        return dict(document)
    prefix = metadata.get("generateName")
    if not isinstance(prefix, str) or not prefix:
        return dict(document)
    return {**document, "metadata": {**metadata, "name": name_from_generate_name(prefix, rand)}}


def planned_document(
    document: Mapping[str, Any], origin: str, gates: FeatureGates, rand: random.Random
) -> PlannedDocument:
    """What applying one document means; ManifestError (KubeRay's message for a Ray object) when it cannot
    be applied."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if goes_to_raypilot(api_version, kind):
        named = with_generated_name(document, rand)
        if kind in SCHEDULE_KINDS:
            return cron_document(named, origin, gates)
        return RayDocument(origin, checked_ray_manifest(named, gates), named)
    return kube_document(document, origin)


def cron_document(document: dict[str, Any], origin: str, gates: FeatureGates) -> CronDocument:
    cronjob = parse_raycronjob(document)
    message = validate_raycronjob(cronjob, gates)
    if message is not None:
        raise ManifestError(message)
    namespace = cronjob.metadata.namespace or DEFAULT_NAMESPACE
    return CronDocument(origin, namespace, cronjob.metadata.name, document)


def kube_document(document: Mapping[str, Any], origin: str) -> KubeDocument:
    """Another object: what `kubectl apply` checks on the client side before sending it."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise ManifestError("apiVersion not set")
    if not isinstance(kind, str) or not kind:
        raise ManifestError("kind not set")
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping):
        raise ManifestError(f"{kind}: metadata not set")
    name, prefix = metadata.get("name"), metadata.get("generateName")
    if not (isinstance(name, str) and name) and not (isinstance(prefix, str) and prefix):
        raise ManifestError(f"{kind}: metadata.name: Required value: name or generateName is required")
    namespace = metadata.get("namespace") or DEFAULT_NAMESPACE
    if not isinstance(namespace, str):
        raise ManifestError(f"{kind}: metadata.namespace must be a string")
    return KubeDocument(
        origin, api_version, kind, namespace, name if isinstance(name, str) and name else None, dict(document)
    )


def namespaces_to_check(
    plan: Sequence[PlannedDocument], cluster_scoped: frozenset[tuple[str, str]]
) -> list[str]:
    """The namespaces the input puts objects in that it does not create itself (a Namespace document earlier
    or later in the same input), in first-use order. `cluster_scoped` holds the (apiVersion, kind) pairs the
    cluster serves without a namespace."""
    created = {
        item.name
        for item in plan
        if isinstance(item, KubeDocument)
        and item.api_version == "v1"
        and item.kind == "Namespace"
        and item.name
    }
    used: list[str] = []
    for item in plan:
        if isinstance(item, RayDocument):
            namespace = item.ref.namespace
        elif isinstance(item, CronDocument):
            namespace = item.namespace
        elif (item.api_version, item.kind) in cluster_scoped:
            continue
        else:
            namespace = item.namespace
        if namespace not in created and namespace not in used:
            used.append(namespace)
    return used


def object_label(kind: str, api_version: str, namespace: str | None, name: str) -> str:
    """How an output line names an object: `rayjob/NS/NAME` as raypilot names Ray objects elsewhere, and
    kubectl's `kind.group` for other groups (`role.rbac.authorization.k8s.io/NS/NAME`); no namespace for a
    cluster-scoped object."""
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    resource = f"{kind.lower()}.{group}" if group and group != RAY_GROUP else kind.lower()
    return f"{resource}/{namespace}/{name}" if namespace is not None else f"{resource}/{name}"
