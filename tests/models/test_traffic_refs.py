"""`raypilot.io/gateway` and `raypilot.io/httproute`: `<namespace>/<name>` values on a RayService that
upgrades incrementally; anything else is refused at every door with a message naming the annotation."""

from __future__ import annotations

import random
from typing import Any

import pytest

from models.features import FeatureGates
from models.manifest import ManifestError
from models.traffic_refs import (
    ANNOTATION_GATEWAY,
    ANNOTATION_HTTPROUTE,
    NamespacedName,
    parse_namespaced_name,
    shared_gateway_of,
    traffic_refs_problem,
    user_route_of,
)
from raypilot.cli.apply_plan import planned_document
from raypilot.controller.objects import validation_message
from raypilot.testing.rayservice_scenarios import INCREMENTAL, rayservice_manifest
from workflows.decisions.rayservice.manifest import manifest_error

PARSED = [
    ("infra/shared-gateway", NamespacedName("infra", "shared-gateway")),
    (" team-a / api.v2 ", NamespacedName("team-a", "api.v2")),
    ("shared-gateway", None),  # no namespace
    ("infra/", None),
    ("/gw", None),
    ("a/b/c", None),
    ("Infra/gw", None),  # a namespace is a lowercase DNS-1123 label
    ("infra/gw_1", None),
    ("", None),
]


@pytest.mark.parametrize(("raw", "expected"), PARSED)
def test_a_reference_is_a_namespace_and_a_name(raw: str, expected: NamespacedName | None) -> None:
    assert parse_namespaced_name(raw) == expected


def test_the_references_are_read_from_their_annotations() -> None:
    annotations = {ANNOTATION_GATEWAY: "infra/gw", ANNOTATION_HTTPROUTE: "team-a/api"}
    assert shared_gateway_of(annotations) == NamespacedName("infra", "gw")
    assert user_route_of(annotations) == NamespacedName("team-a", "api")
    assert shared_gateway_of({}) is None
    assert user_route_of(None) is None


PROBLEMS = [
    ({ANNOTATION_GATEWAY: "shared-gateway"}, True, ANNOTATION_GATEWAY, "<namespace>/<name>"),
    ({ANNOTATION_HTTPROUTE: "team-a/api/x"}, True, ANNOTATION_HTTPROUTE, "<namespace>/<name>"),
    ({ANNOTATION_HTTPROUTE: "team-a/api"}, False, ANNOTATION_HTTPROUTE, "NewClusterWithIncrementalUpgrade"),
    ({ANNOTATION_GATEWAY: "infra/gw"}, False, ANNOTATION_GATEWAY, "NewClusterWithIncrementalUpgrade"),
]


@pytest.mark.parametrize(("annotations", "incremental", "named", "says"), PROBLEMS)
def test_an_unusable_reference_is_named(
    annotations: dict[str, str], incremental: bool, named: str, says: str
) -> None:
    problem = traffic_refs_problem(annotations, incremental)
    assert problem is not None
    assert problem.startswith(f"metadata.annotations[{named}]:")
    assert says in problem


def test_usable_or_absent_references_pass() -> None:
    both = {ANNOTATION_GATEWAY: "infra/gw", ANNOTATION_HTTPROUTE: "team-a/api"}
    assert traffic_refs_problem(both, incremental=True) is None
    assert traffic_refs_problem({}, incremental=False) is None


def manifest(annotations: dict[str, str], strategy: dict[str, Any] | None) -> dict[str, Any]:
    return rayservice_manifest(annotations=annotations, strategy=strategy, autoscaling=True)


@pytest.mark.parametrize(
    ("annotations", "strategy", "named"),
    [
        ({ANNOTATION_GATEWAY: "gw"}, INCREMENTAL, ANNOTATION_GATEWAY),
        ({ANNOTATION_HTTPROUTE: "team-a/api"}, None, ANNOTATION_HTTPROUTE),
        ({ANNOTATION_HTTPROUTE: "team-a/api"}, {"type": "NewCluster"}, ANNOTATION_HTTPROUTE),
    ],
)
def test_every_door_rejects_the_rayservice(
    annotations: dict[str, str], strategy: dict[str, Any] | None, named: str
) -> None:
    bad, gates = manifest(annotations, strategy), FeatureGates()
    with pytest.raises(ManifestError, match=named):
        planned_document(bad, "file.yaml", gates, random.Random(1))
    assert named in (validation_message(bad, gates) or "")
    assert named in (manifest_error(bad, gates) or "")


def test_a_usable_reference_on_an_incremental_rayservice_is_accepted() -> None:
    good = manifest({ANNOTATION_GATEWAY: "infra/gw", ANNOTATION_HTTPROUTE: "team-a/api"}, INCREMENTAL)
    assert manifest_error(good, FeatureGates()) is None
