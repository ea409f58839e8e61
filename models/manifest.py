"""Reading KubeRay manifests: YAML/JSON text -> JSON object -> RayJob / RayService, with one clear message.

Every failure is a `ManifestError` whose message is what the user sees: it names the field by its path in
KubeRay's JSON names (e.g. `spec.rayClusterSpec.workerGroupSpecs[0].groupName`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from models.base import dump_manifest
from models.raycluster import RAY_API_VERSION, RayCluster, RayObject
from models.raycronjob import RayCronJob
from models.rayjob import RayJob
from models.rayservice import RayService
from models.yaml_loader import StringTimestampLoader

__all__ = [
    "ManifestError",
    "dump_manifest",
    "format_validation_error",
    "load_manifest_documents",
    "load_manifest_text",
    "parse_manifest",
    "parse_raycluster",
    "parse_raycronjob",
    "parse_rayjob",
    "parse_rayservice",
]

SUPPORTED_KINDS = ("RayJob", "RayService")
_MAX_REPORTED_ERRORS = 5
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
        raise ManifestError(f'unsupported apiVersion {_quoted(api_version)}: expected "{RAY_API_VERSION}"')
    kind = obj.get("kind")
    expected = " or ".join(kinds)
    if kind is None:
        raise ManifestError(f"missing kind: expected {expected}")
    if kind not in kinds:
        raise ManifestError(f"unsupported kind {_quoted(kind)}: expected {expected}")
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


def format_validation_error(error: ValidationError, data: object) -> str:
    """One message for a pydantic error, naming each field by its KubeRay JSON path."""
    messages: dict[str, str] = {}
    for detail in error.errors(include_url=False):
        path = _json_path(detail, data)
        if path not in messages:
            messages[path] = _describe(detail, path)
    reported = list(messages.values())[:_MAX_REPORTED_ERRORS]
    more = len(messages) - len(reported)
    text = "; ".join(reported)
    return f"{text} (and {more} more)" if more else text


def _json_path(detail: ErrorDetails, data: object) -> str:
    """The path of the failing value, keeping only loc parts that exist in the input.

    pydantic adds union/validator tags ("str", "function-before[...]") to `loc`; walking the input drops them.
    """
    path = ""
    current: object = data
    loc = detail["loc"]
    for index, part in enumerate(loc):
        is_last = index == len(loc) - 1
        if isinstance(current, Mapping) and isinstance(part, str) and part in current:
            path = f"{path}.{part}" if path else part
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            path = f"{path}[{part}]"
            current = current[part]
        elif is_last and detail["type"] == "missing" and isinstance(part, str):
            path = f"{path}.{part}" if path else part
    return path


_QUOTED_CHOICE = re.compile(r"'([^']*)'")


def _describe(detail: ErrorDetails, path: str) -> str:
    kind = detail["type"]
    if kind == "extra_forbidden":
        return f'unknown field "{path}"'
    if kind in {"enum", "literal_error"}:
        expected = str((detail.get("ctx") or {}).get("expected", ""))
        choices = ", ".join(choice or '""' for choice in _QUOTED_CHOICE.findall(expected))
        message = f"unsupported value {_quoted(detail['input'])}: expected one of {choices}"
    else:
        message = detail["msg"].removeprefix("Value error, ")
    return f"{path}: {message}" if path else message


def _quoted(value: object) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


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
