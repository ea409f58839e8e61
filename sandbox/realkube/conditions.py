"""A Kubernetes object's status conditions as the real stack and its tests read them (a Node's or a Pod's
Ready)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["condition_status", "is_ready"]


def condition_status(obj: Mapping[str, Any] | None, kind: str) -> str:
    """The status of the object's `kind` condition ("True", "False", "Unknown"); "" when it has none."""
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status") or "")
    return ""


def is_ready(obj: Mapping[str, Any] | None) -> bool:
    return condition_status(obj, "Ready") == "True"
