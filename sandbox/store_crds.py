"""CustomResourceDefinitions: an applied CRD makes the sandbox serve its kind, as an API server does.

What is served per version: the REST endpoints (list, get, create, update, patch, delete, watch), the status
subresource when the CRD declares it, finalizers, deletionTimestamp and ownerReference garbage collection (the
store's, as for every kind), and `kubectl get` columns from additionalPrinterColumns. Not done: validation and
pruning by the openAPIV3Schema (the sandbox stores what it is given), defaulting, conversion webhooks.
"""

from __future__ import annotations

from typing import Any

from sandbox.resources import ResourceType

CRD_GROUP = "apiextensions.k8s.io"
CRD_KIND = "CustomResourceDefinition"


class InvalidDefinition(ValueError):
    """A CRD the API server would reject; str() is its message."""


def is_crd(rt: ResourceType) -> bool:
    return rt.group == CRD_GROUP and rt.kind == CRD_KIND


def served_types(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types one CRD serves: one per served version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    types = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        columns = tuple(
            (str(column["name"]), str(column.get("type", "string")), str(column["jsonPath"]))
            for column in version.get("additionalPrinterColumns") or []
        )
        types.append(
            ResourceType(
                group=str(spec["group"]),
                version=str(version["name"]),
                kind=str(names["kind"]),
                plural=str(names["plural"]),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                subresources=frozenset(version.get("subresources") or {}),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                printer_columns=columns,
            )
        )
    return types


def check_definition(crd: dict[str, Any]) -> None:
    """The rules of apiextensions validation that keep the served kinds addressable."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group"), names.get("plural")
    if not group or not plural or not names.get("kind"):
        raise InvalidDefinition("spec.group, spec.names.plural and spec.names.kind are required")
    expected = f"{plural}.{group}"
    name = (crd.get("metadata") or {}).get("name")
    if name != expected:
        raise InvalidDefinition(
            f'metadata.name: Invalid value: "{name}": must be spec.names.plural+"."+spec.group'
        )
    versions = spec.get("versions") or []
    if not versions or not any(version.get("name") for version in versions):
        raise InvalidDefinition(
            "spec.versions: Invalid value: must have exactly one version marked as storage"
        )
    if sum(1 for version in versions if version.get("storage")) != 1:
        raise InvalidDefinition(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
        )


def accepted_status(crd: dict[str, Any]) -> dict[str, Any]:
    """The status the API server writes once it serves the CRD (`kubectl wait --for condition=established`
    waits for it)."""
    names = (crd.get("spec") or {}).get("names") or {}
    accepted = {
        "singular": names.get("kind", "").lower(),
        "listKind": names.get("kind", "") + "List",
        **names,
    }
    timestamp = crd["metadata"]["creationTimestamp"]
    conditions = [
        {
            "type": condition_type,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": timestamp,
        }
        for condition_type, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    storage = [
        version["name"] for version in (crd.get("spec") or {}).get("versions", []) if version.get("storage")
    ]
    return {"acceptedNames": accepted, "conditions": conditions, "storedVersions": storage}
