"""The `raypilot.io/` annotations whose value is an object written as YAML or JSON (`raypilot.io/schedule`,
`raypilot.io/rollout`): read the same way, so a bad value gets the same message whichever it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml


def annotation_object(annotations: Mapping[str, str], annotation: str, example: str) -> dict[str, Any] | None:
    """The object `annotation` holds; None when it is absent or blank. ValueError naming the annotation when
    its value is not YAML or JSON, or not an object (`example` shows one in the message)."""
    text = annotations.get(annotation)
    if text is None or not text.strip():
        return None
    try:
        loaded: Any = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{annotation}: invalid YAML or JSON: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"{annotation}: must be an object, e.g. {example}")
    return loaded
