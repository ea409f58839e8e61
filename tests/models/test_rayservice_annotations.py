"""raypilot.io/ annotations that take a value, rejected with the manifest and a message naming the
annotation, at each door: `raypilot apply` (the plan), the controller (its validation message) and the
workflow (its first-run check, also for a run started with the `temporal` CLI; the workflow test of that door
is tests/workflows/rayservice/test_annotations.py)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest

from models.features import FeatureGates
from models.manifest import ManifestError
from models.rayservice_annotations import (
    ANNOTATION_IN_PLACE_RESTART,
    MAX_DRAIN_ANNOTATION,
    rayservice_annotation_problem,
)
from raypilot.cli.apply_plan import planned_document
from raypilot.controller.objects import validation_message
from raypilot.testing.rayservice_scenarios import rayservice_manifest
from tests.raypilot.cli.test_apply_plan import rayjob
from workflows.decisions.rayservice.drain import max_drain_time
from workflows.decisions.rayservice.manifest import manifest_error, manifest_update_error

INVALID = [
    ({MAX_DRAIN_ANNOTATION: "5m"}, MAX_DRAIN_ANNOTATION, "'5m'"),
    ({MAX_DRAIN_ANNOTATION: "-1"}, MAX_DRAIN_ANNOTATION, "'-1'"),
    ({MAX_DRAIN_ANNOTATION: ""}, MAX_DRAIN_ANNOTATION, "''"),
    ({MAX_DRAIN_ANNOTATION: "1.5"}, MAX_DRAIN_ANNOTATION, "'1.5'"),
    ({MAX_DRAIN_ANNOTATION: "\u00b2"}, MAX_DRAIN_ANNOTATION, "'\u00b2'"),  # a digit to isdigit, not to int
    ({ANNOTATION_IN_PLACE_RESTART: "yes"}, ANNOTATION_IN_PLACE_RESTART, "'yes'"),
    ({ANNOTATION_IN_PLACE_RESTART: ""}, ANNOTATION_IN_PLACE_RESTART, "''"),
]
VALID: list[dict[str, str] | None] = [
    None,
    {},
    {MAX_DRAIN_ANNOTATION: "0"},
    {MAX_DRAIN_ANNOTATION: " 300 "},
    {ANNOTATION_IN_PLACE_RESTART: "true"},
    {ANNOTATION_IN_PLACE_RESTART: "False"},
    {"raypilot.io/some-future-flag": "anything"},  # annotations raypilot does not know stay ignored
]


@pytest.mark.parametrize(("annotations", "named", "shown"), INVALID)
def test_an_unusable_value_is_named_with_what_it_was(
    annotations: dict[str, str], named: str, shown: str
) -> None:
    problem = rayservice_annotation_problem(annotations)
    assert problem is not None
    assert problem.startswith(f"metadata.annotations[{named}]: must be")
    assert f"got {shown}" in problem


@pytest.mark.parametrize("annotations", VALID)
def test_absent_or_usable_values_pass(annotations: dict[str, str] | None) -> None:
    assert rayservice_annotation_problem(annotations) is None


def test_the_drain_reads_the_values_it_accepted() -> None:
    assert max_drain_time({MAX_DRAIN_ANNOTATION: " 300 "}) == timedelta(seconds=300)
    assert max_drain_time({MAX_DRAIN_ANNOTATION: "0"}) is None  # KubeRay's deletion at the delay


def manifest_with(annotations: dict[str, str]) -> dict[str, Any]:
    return rayservice_manifest(annotations=annotations)


@pytest.mark.parametrize(("annotations", "named", "shown"), INVALID)
def test_every_door_rejects_the_rayservice(annotations: dict[str, str], named: str, shown: str) -> None:
    manifest = manifest_with(annotations)
    gates = FeatureGates()
    with pytest.raises(ManifestError, match=named):  # raypilot apply: nothing is sent anywhere
        planned_document(manifest, "file.yaml", gates, random.Random(1))
    assert named in (validation_message(manifest, gates) or "")  # the controller: ValidationFailed status
    assert named in (manifest_error(manifest, gates) or "")  # a workflow start (raypilot or temporal CLI)
    # An `apply` update to a running RayService.
    assert named in (manifest_update_error(rayservice_manifest(), manifest, gates) or "")


@pytest.mark.parametrize(
    ("annotations", "named"),
    [
        ({"raypilot.io/cleanup-after": "soon"}, "raypilot.io/cleanup-after"),
        ({"raypilot.io/retry-policy": "{classes: {Typo: {}}}"}, "raypilot.io/retry-policy"),
    ],
)
def test_the_controller_rejects_a_rayjob_annotation_as_apply_and_the_workflow_do(
    annotations: dict[str, str], named: str
) -> None:
    message = validation_message(rayjob({"name": "x", "annotations": annotations}), FeatureGates())
    assert message is not None
    assert named in message
    assert validation_message(rayjob({"name": "x"}), FeatureGates()) is None
