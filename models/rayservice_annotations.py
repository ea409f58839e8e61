"""The `raypilot.io/` annotations of a RayService that take a value (raypilot's extensions beyond KubeRay),
checked when the manifest is: at `raypilot apply`, at a workflow start or `apply` update (also one started
with the `temporal` CLI) and by the controller, so a bad value is rejected before anything is created,
with a message naming the annotation, instead of being ignored later. (`raypilot.io/rollout` has its own
check in models/rollout.py.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "ANNOTATION_IN_PLACE_RESTART",
    "MAX_DRAIN_ANNOTATION",
    "rayservice_annotation_problem",
    "whole_seconds",
]

MAX_DRAIN_ANNOTATION: Final = "raypilot.io/max-drain-seconds"
ANNOTATION_IN_PLACE_RESTART: Final = "raypilot.io/in-place-restart"
_BOOLEANS: Final = ("true", "false")


def whole_seconds(raw: str) -> int | None:
    """A whole number of seconds (0 or more, blanks around it allowed); None for anything else (ASCII digits
    only: `str.isdigit` also takes digits `int` refuses, like "²")."""
    text = raw.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _max_drain_problem(annotations: Mapping[str, str]) -> str | None:
    raw = annotations.get(MAX_DRAIN_ANNOTATION)
    if raw is None or whole_seconds(raw) is not None:
        return None
    return (
        f"metadata.annotations[{MAX_DRAIN_ANNOTATION}]: must be a whole number of seconds (0 or more), "
        f'e.g. "300", got {raw!r}'
    )


def _in_place_restart_problem(annotations: Mapping[str, str]) -> str | None:
    raw = annotations.get(ANNOTATION_IN_PLACE_RESTART)
    if raw is None or raw.strip().lower() in _BOOLEANS:
        return None
    return f'metadata.annotations[{ANNOTATION_IN_PLACE_RESTART}]: must be "true" or "false", got {raw!r}'


def rayservice_annotation_problem(annotations: Mapping[str, str] | None) -> str | None:
    """Why one of the RayService's raypilot.io/ annotations is unusable; None when all are absent or valid."""
    found = annotations or {}
    return _max_drain_problem(found) or _in_place_restart_problem(found)
