"""`raypilot apply --rollout FILE`: the `raypilot.io/rollout` settings kept in a file of their own (YAML or
JSON), written into the annotation of every RayService of the input before it is checked, so a bad file
rejects the input (exit 2, nothing applied) exactly as a bad annotation does."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import yaml

from models.rollout import ANNOTATION_ROLLOUT, rollout_error
from raypilot.cli.apply_sources import SourceDocument
from raypilot.runs.errors import rejected

__all__ = ["rollout_annotation_from_file", "with_rollout"]


def rollout_annotation_from_file(path: str) -> str:
    """The annotation's value (compact JSON) from FILE; a rejection naming the file when it is unreadable or
    its settings are invalid."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise rejected(f"--rollout {path}: cannot read it: {reason}") from None
    problem = rollout_error({ANNOTATION_ROLLOUT: text})
    if problem is not None:
        raise rejected(f"--rollout {path}: {problem}")
    return json.dumps(yaml.safe_load(text), separators=(",", ":"), sort_keys=True)


def with_rollout(documents: Sequence[SourceDocument], annotation: str) -> list[SourceDocument]:
    """Every RayService of the input carries `annotation` (replacing one it had); other objects unchanged.
    An input without a RayService is rejected: the settings would silently apply to nothing."""
    result: list[SourceDocument] = []
    services = 0
    for document in documents:
        body = document.body
        if body.get("kind") == "RayService" and isinstance(body.get("metadata", {}), dict):
            services += 1
            metadata = dict(body.get("metadata") or {})
            metadata["annotations"] = {**(metadata.get("annotations") or {}), ANNOTATION_ROLLOUT: annotation}
            body = {**body, "metadata": metadata}
        result.append(replace(document, body=body))
    if services == 0:
        raise rejected("--rollout applies to RayServices, and the input has none")
    return result
