"""The apiVersion Events and ownerReferences name: raypilot.io/v1 only when the controller said so."""

from __future__ import annotations

import pytest

from models.source import ANNOTATION_OBJECT_API_VERSION, object_api_version


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, "ray.io/v1"),
        ({ANNOTATION_OBJECT_API_VERSION: "raypilot.io/v1"}, "raypilot.io/v1"),
        ({ANNOTATION_OBJECT_API_VERSION: "example.com/v1"}, "ray.io/v1"),  # nothing else can be claimed
        ({"other": "raypilot.io/v1"}, "ray.io/v1"),
    ],
)
def test_object_api_version(annotations: dict[str, str], expected: str) -> None:
    assert object_api_version(annotations) == expected
