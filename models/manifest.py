"""Reading KubeRay manifests: YAML/JSON text -> JSON object -> RayJob / RayService, with one clear message.

Every failure is a `ManifestError` whose message is what the user sees: it names the field by its path in
KubeRay's JSON names (e.g. `spec.rayClusterSpec.workerGroupSpecs[0].groupName`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from models.base import dump_manifest
from models.raycluster import RAY_API_VERSION, RayCluster, RayObject
from models.raycronjob import RayCronJob
from models.rayjob import RayJob
from models.rayservice import RayService
from models.validation_message import format_validation_error, json_quoted
from models.yaml_loader import StringTimestampLoader

__all__ = [
    "ManifestError",
    "dump_manifest",
    "load_manifest_documents",
    "load_manifest_text",
    "parse_manifest",
    "parse_raycluster",
    "parse_raycronjob",
    "parse_rayjob",
    "parse_rayservice",
]

SUPPORTED_KINDS = ("RayJob", "RayService")
# The Kubernetes API server refuses a larger request body (413) with this limit in its message.
MAX_MANIFEST_BYTES = 3 * 1024 * 1024
# Python's parsers and pydantic recurse per level and give up near the interpreter's recursion limit (the
# Kubernetes API server's own limit, 10000 levels, is far beyond any real manifest).
NESTED_TOO_DEEPLY = "the manifest is nested too deeply to read"


class ManifestError(ValueError):
    """A manifest that cannot be read or does not match KubeRay's schema; str(error) is for the user."""


def load_manifest_text(text: str) -> dict[str, Any]:
    """Parse one YAML or JSON document that must be a mapping."""
    _check_size(text)
    try:
        loaded = _load_document(text)
    except RecursionError:
        raise ManifestError(NESTED_TOO_DEEPLY) from None
    if loaded is None:
        raise ManifestError("the manifest is empty")
    if not isinstance(loaded, dict):
        raise ManifestError(f"a manifest must be a mapping (an object), got {_json_type_name(loaded)}")
    return loaded


def _check_size(text: str) -> None:
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_MANIFEST_BYTES:
        raise ManifestError(
            f"the manifest is {size} bytes: Request entity too large: limit is {MAX_MANIFEST_BYTES}"
        )


def _load_document(text: str) -> Any:
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise ManifestError(
                f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
            ) from None
    try:
        return yaml.load(text, Loader=StringTimestampLoader)  # a SafeLoader: builds no objects
    except yaml.MarkedYAMLError as error:
        raise ManifestError(_describe_yaml_error(error)) from None
    except yaml.YAMLError as error:
        raise ManifestError(f"invalid YAML: {error}") from None


def load_manifest_documents(text: str) -> list[dict[str, Any]]:
    """Every document of a YAML stream (`---` separated) or the one JSON object, in order, as
    `kubectl apply -f` reads a file: empty documents are skipped; each other one must be a mapping.
    The limits of `load_manifest_text` hold for the whole text."""
    if text.lstrip().startswith("{"):
        return [load_manifest_text(text)]
    _check_size(text)
    try:
        loaded = list(yaml.load_all(text, Loader=StringTimestampLoader))  # a SafeLoader: builds no objects
    except RecursionError:
        raise ManifestError(NESTED_TOO_DEEPLY) from None
    except yaml.MarkedYAMLError as error:
        raise ManifestError(_describe_yaml_error(error)) from None
    except yaml.YAMLError as error:
        raise ManifestError(f"invalid YAML: {error}") from None
    documents: list[dict[str, Any]] = []
    for number, document in enumerate(loaded, start=1):
        if document is None:
            continue
        if not isinstance(document, dict):
            got = _json_type_name(document)
            raise ManifestError(f"document {number}: a manifest must be a mapping (an object), got {got}")
        documents.append(document)
    return documents


def _describe_yaml_error(error: yaml.MarkedYAMLError) -> str:
    mark = error.problem_mark or error.context_mark
    problem = error.problem or error.context or "malformed document"
    if mark is None:
        return f"invalid YAML: {problem}"
    return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"


def parse_manifest(obj: Mapping[str, Any]) -> RayJob | RayService:
    """A RayJob or RayService manifest, chosen by its `kind`."""
    kind = _checked_header(obj, SUPPORTED_KINDS)
    if kind == "RayJob":
        return parse_rayjob(obj)
    return parse_rayservice(obj)


def parse_rayjob(obj: Mapping[str, Any]) -> RayJob:
    return _parse_object(RayJob, obj)


def parse_rayservice(obj: Mapping[str, Any]) -> RayService:
    return _parse_object(RayService, obj)


def parse_raycronjob(obj: Mapping[str, Any]) -> RayCronJob:
    return _parse_object(RayCronJob, obj)


def parse_raycluster(obj: Mapping[str, Any]) -> RayCluster:
    return _parse_object(RayCluster, obj)


def _checked_header(obj: object, kinds: Sequence[str]) -> str:
    if not isinstance(obj, Mapping):
        raise ManifestError(f"a manifest must be a mapping (an object), got {_json_type_name(obj)}")
    api_version = obj.get("apiVersion")
    if api_version != RAY_API_VERSION:
        if api_version is None:
            raise ManifestError(f'missing apiVersion: expected "{RAY_API_VERSION}"')
        raise ManifestError(
            f'unsupported apiVersion {json_quoted(api_version)}: expected "{RAY_API_VERSION}"'
        )
    kind = obj.get("kind")
    expected = " or ".join(kinds)
    if kind is None:
        raise ManifestError(f"missing kind: expected {expected}")
    if kind not in kinds:
        raise ManifestError(f"unsupported kind {json_quoted(kind)}: expected {expected}")
    return str(kind)


_ObjectT = TypeVar("_ObjectT", bound=RayObject)


def _parse_object(model: type[_ObjectT], obj: Mapping[str, Any]) -> _ObjectT:
    """A manifest of `model`'s kind: its apiVersion and kind, then the schema, then metadata.name."""
    _checked_header(obj, (model.kind_name(),))
    try:
        parsed = model.model_validate(obj)
    except ValidationError as error:
        raise ManifestError(format_validation_error(error, obj)) from None
    except RecursionError:
        raise ManifestError(NESTED_TOO_DEEPLY) from None
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        if isinstance(metadata, Mapping) and metadata.get("generateName"):
            # The workflow id is built from the name: `raypilot apply` picks one from the prefix (as the API
            # server does for `kubectl create`); a workflow started directly needs it already chosen.
            raise ManifestError(
                "metadata.name: Field required (metadata.generateName is resolved by `raypilot apply`; "
                "a workflow started directly needs metadata.name)"
            )
        raise ManifestError("metadata.name: Field required")
    return parsed


def _json_type_name(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__
