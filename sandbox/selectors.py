"""Kubernetes label selectors (string form) and the few field selectors the sandbox supports."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_SET_OPERATOR = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQUALITY = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_FIELD_TERM = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*([^,=!]*?)\s*$")

# The field selectors kube-apiserver accepts, per kind (metadata.name and metadata.namespace for all).
COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
FIELDS_BY_KIND: dict[str, frozenset[str]] = {
    "Pod": frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    "Event": frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    "Secret": frozenset({"type"}),
    "Namespace": frozenset({"status.phase"}),
    "Job": frozenset({"status.successful"}),
}


class SelectorError(ValueError):
    """The selector string does not parse."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects that lack the key, as in Kubernetes.
        return not present or labels[self.key] not in self.values


def _split_top_level(selector: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in (part.strip() for part in parts) if p]


def parse_label_selector(selector: str | None) -> list[Requirement]:
    if not selector or not selector.strip():
        return []
    requirements = []
    for term in _split_top_level(selector):
        equality = _EQUALITY.match(term)
        if equality:
            key, op, value = equality.groups()
            requirements.append(Requirement(key, "!=" if op == "!=" else "=", frozenset({value})))
            continue
        set_based = _SET_OPERATOR.match(term)
        if not set_based:
            raise SelectorError(f"unable to parse requirement: {term!r}")
        negated, key, op, raw_values = set_based.groups()
        if op:
            if negated:
                raise SelectorError(f"unable to parse requirement: {term!r}")
            values = frozenset(v.strip() for v in raw_values.split(",") if v.strip())
            requirements.append(Requirement(key, op, values))
        else:
            requirements.append(Requirement(key, "!exists" if negated else "exists"))
    return requirements


def label_matcher(selector: str | None) -> Callable[[Mapping[str, str]], bool]:
    requirements = parse_label_selector(selector)
    return lambda labels: all(r.matches(labels) for r in requirements)


def labels_match_selector(labels: Mapping[str, str] | None, selector: str | None) -> bool:
    return label_matcher(selector)(labels or {})


def selector_from_match_labels(match_labels: Mapping[str, str]) -> str:
    """`{"a": "b"}` -> `"a=b"`: a Service selector or matchLabels in string form."""
    return ",".join(f"{key}={value}" for key, value in sorted(match_labels.items()))


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Mapping):  # Event.source is matched on its component
        value = value.get("component")
    return "" if value is None else str(value)


def field_matcher(selector: str | None, kind: str | None = None) -> Callable[[Mapping[str, Any]], bool]:
    """=, == and != on metadata.name, metadata.namespace and the kind's own fields (FIELDS_BY_KIND)."""
    if not selector or not selector.strip():
        return lambda _obj: True
    checks: list[tuple[str, bool, str]] = []
    for term in _split_top_level(selector):
        match = _FIELD_TERM.match(term)
        if not match:
            raise SelectorError(f"invalid field selector: {term!r}")
        key, op, value = match.groups()
        if key not in COMMON_FIELDS and key not in FIELDS_BY_KIND.get(kind or "", frozenset()):
            raise SelectorError(f'field label not supported: "{key}"')
        checks.append((key, op != "!=", value))
    return lambda obj: all((_field_value(obj, key) == value) == equal for key, equal, value in checks)
