"""The `raypilot.io/` annotations whose value is an object written as YAML or JSON (`raypilot.io/schedule`,
`raypilot.io/rollout`): read the same way, so a bad value gets the same message whichever it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from models.validation_message import format_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)


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


def annotation_model(
    annotations: Mapping[str, str], annotation: str, example: str, model: type[ModelT]
) -> ModelT | None:
    """The object `annotation` holds, validated as `model`; None when it is absent or blank. ValueError
    naming the annotation and the field when the value does not fit `model`."""
    loaded = annotation_object(annotations, annotation, example)
    if loaded is None:
        return None
    try:
        return model.model_validate(loaded)
    except ValidationError as error:
        raise ValueError(f"{annotation}: {format_validation_error(error, loaded)}") from None
