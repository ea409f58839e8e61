"""A pydantic validation error as the one message a user sees: each failing field named by its path in
KubeRay's JSON names (e.g. `spec.rayClusterSpec.workerGroupSpecs[0].groupName`), for manifests and for the
`raypilot.io/` annotations alike."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pydantic import ValidationError
from pydantic_core import ErrorDetails

__all__ = ["format_validation_error", "json_quoted"]

_MAX_REPORTED_ERRORS = 5


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
        message = f"unsupported value {json_quoted(detail['input'])}: expected one of {choices}"
    else:
        message = detail["msg"].removeprefix("Value error, ")
    return f"{path}: {message}" if path else message


def json_quoted(value: object) -> str:
    """A value as a message shows it: a string in JSON's quotes, anything else as Python writes it."""
    return json.dumps(value) if isinstance(value, str) else repr(value)
