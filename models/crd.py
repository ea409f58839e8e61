"""raypilot's own custom resources (`raypilot.io/v1` RayJob and RayService), generated from the models.

The CRDs are derived from the same pydantic models that validate KubeRay's `ray.io/v1` manifests, so the
schema the API server enforces and the one raypilot validates with never drift apart. `deploy/crds/` holds
the generated files; a test checks that they equal what this module generates.

The pydantic JSON schema is turned into a Kubernetes *structural* schema: every `$ref` inlined, `X | None`
reduced to `X` (Kubernetes treats an absent field as unset), descriptions, titles and defaults dropped (the
API server must store what was applied, unchanged: the spec hash depends on it), a model that keeps unknown
fields marked `x-kubernetes-preserve-unknown-fields`, a Kubernetes quantity `x-kubernetes-int-or-string`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from models.base import INT32_MAX, INT32_MIN
from models.rayjob import RayJobSpec, RayJobStatus
from models.rayservice import RayServiceSpec, RayServiceStatuses

RAYPILOT_GROUP = "raypilot.io"
RAYPILOT_VERSION = "v1"
RAYPILOT_API_VERSION = f"{RAYPILOT_GROUP}/{RAYPILOT_VERSION}"
# Not KubeRay's (it has none): `kubectl get rayjobs` would be ambiguous beside ray.io's, these are not.
SHORT_NAMES = {"RayJob": ("rpjob",), "RayService": ("rpsvc",)}


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: str = "string"


_AGE = PrinterColumn("age", ".metadata.creationTimestamp", "date")
# KubeRay's printer columns (its `+kubebuilder:printcolumn` markers), plus the RayService's clusters.
PRINTER_COLUMNS: dict[str, tuple[PrinterColumn, ...]] = {
    "RayJob": (
        PrinterColumn("job status", ".status.jobStatus"),
        PrinterColumn("deployment status", ".status.jobDeploymentStatus"),
        PrinterColumn("ray cluster name", ".status.rayClusterName"),
        PrinterColumn("start time", ".status.startTime"),
        PrinterColumn("end time", ".status.endTime"),
        _AGE,
    ),
    "RayService": (
        PrinterColumn("service status", ".status.serviceStatus"),
        PrinterColumn("num serve endpoints", ".status.numServeEndpoints"),
        PrinterColumn("active cluster", ".status.activeServiceStatus.rayClusterName"),
        PrinterColumn("pending cluster", ".status.pendingServiceStatus.rayClusterName"),
        _AGE,
    ),
}

_MODELS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "RayJob": (RayJobSpec, RayJobStatus),
    "RayService": (RayServiceSpec, RayServiceStatuses),
}
KINDS = tuple(_MODELS)


def plural_of(kind: str) -> str:
    return kind.lower() + "s"


def crd_name(kind: str) -> str:
    """`rayjobs.raypilot.io`: the CRD's metadata.name, as Kubernetes requires it."""
    return f"{plural_of(kind)}.{RAYPILOT_GROUP}"


def custom_resource_definition(kind: str) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition of one of raypilot's kinds."""
    spec_model, status_model = _MODELS[kind]
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": structural_schema(spec_model),
            "status": structural_schema(status_model),
        },
    }
    columns = [
        {"name": column.name, "type": column.type, "jsonPath": column.json_path}
        for column in PRINTER_COLUMNS[kind]
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": crd_name(kind),
            "labels": {"app.kubernetes.io/name": "raypilot"},
        },
        "spec": {
            "group": RAYPILOT_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural_of(kind),
                "singular": kind.lower(),
                "shortNames": list(SHORT_NAMES[kind]),
                "categories": ["all", "raypilot"],
            },
            "versions": [
                {
                    "name": RAYPILOT_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema (KubeRay's JSON names) as a Kubernetes structural schema."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    definitions = raw.pop("$defs", {})
    return _structural(raw, definitions)


_DROPPED_KEYS = frozenset({"title", "description", "default", "examples"})


def _structural(node: Mapping[str, Any], definitions: Mapping[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        return _structural(definitions[name], definitions)
    if "anyOf" in node:
        return _union(node["anyOf"], definitions)
    if "const" in node:
        return {"type": _json_type(node["const"]), "enum": [node["const"]]}
    if not node.get("type"):
        # Any: whatever JSON the user wrote is kept.
        return {"x-kubernetes-preserve-unknown-fields": True}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS or key in ("properties", "items", "additionalProperties"):
            continue
        out[key] = copy.deepcopy(value)
    if out.get("type") == "integer":
        _integer_format(out)
    if out.get("type") == "object":
        _object(node, out, definitions)
    if out.get("type") == "array" and "items" in node:
        out["items"] = _structural(node["items"], definitions)
    return out


def _integer_format(out: dict[str, Any]) -> None:
    if out.get("minimum") == INT32_MIN and out.get("maximum") == INT32_MAX:
        del out["minimum"], out["maximum"]
        out["format"] = "int32"
    else:
        out.setdefault("format", "int64")


def _object(node: Mapping[str, Any], out: dict[str, Any], definitions: Mapping[str, Any]) -> None:
    properties = node.get("properties")
    extra = node.get("additionalProperties")
    if properties is not None:
        out["properties"] = {name: _structural(value, definitions) for name, value in properties.items()}
        if extra is True:
            # A model that keeps fields it does not declare (a pod template): keep them in the API too.
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif isinstance(extra, Mapping):
        out["additionalProperties"] = _structural(extra, definitions)
    else:
        out["x-kubernetes-preserve-unknown-fields"] = True


def _union(options: list[Mapping[str, Any]], definitions: Mapping[str, Any]) -> dict[str, Any]:
    present = [option for option in options if option.get("type") != "null"]
    if len(present) == 1:
        return _structural(present[0], definitions)
    resolved = [_structural(option, definitions) for option in present]
    types = {option.get("type") for option in resolved}
    if types <= {"string", "integer", "number"} and "string" in types and types & {"integer", "number"}:
        # A Kubernetes quantity ("500m", 2): the API's own int-or-string.
        return {"x-kubernetes-int-or-string": True}
    if types == {"string"}:
        # A known enum value or any string (the controller reports KubeRay's message for unknown ones).
        return {"type": "string"}
    raise ValueError(f"no structural schema for a union of {sorted(map(str, types))}")


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"
