"""A shared Gateway admits raypilot's route by Gateway API's allowedRoutes (Same/All/Selector, kinds), and
raypilot's `<rs>-httproute` attaches to it instead of `<rs>-gateway`."""

from __future__ import annotations

from typing import Any

import pytest

from models.traffic_refs import ANNOTATION_GATEWAY, NamespacedName
from workflows.decisions.rayservice.upgrade.shared_gateway import (
    attached_to_gateway,
    gateway_admission_problem,
    label_selector_matches,
    listener_admits,
    needs_namespace_labels,
)

REF = NamespacedName("infra", "shared")


def listener(namespaces: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"name": "http", "protocol": "HTTP", "port": 80, **fields}
    if namespaces is not None:
        found.setdefault("allowedRoutes", {})["namespaces"] = namespaces
    return found


TEAM = {"kubernetes.io/metadata.name": "team-a", "tier": "web"}
SELECT_WEB = {"from": "Selector", "selector": {"matchLabels": {"tier": "web"}}}

ADMITS = [
    # (listener, route namespace, labels of the route's namespace, admitted)
    (listener(), "infra", None, True),  # from: Same is the default
    (listener(), "team-a", TEAM, False),
    (listener({"from": "Same"}), "team-a", TEAM, False),
    (listener({"from": "All"}), "team-a", None, True),
    (listener(SELECT_WEB), "team-a", TEAM, True),
    (listener(SELECT_WEB), "team-b", {"tier": "db"}, False),
    (listener(SELECT_WEB), "team-a", None, False),  # labels not read: no admission assumed
    (listener({"from": "All"}, protocol="TCP"), "team-a", None, False),  # TCP listeners take TCPRoutes
    (listener({"from": "All"}, protocol="HTTPS"), "team-a", None, True),
    (
        listener({"from": "All"}, allowedRoutes={"kinds": [{"kind": "GRPCRoute"}]}),
        "team-a",
        None,
        False,
    ),
    (
        listener(
            {"from": "All"},
            allowedRoutes={"kinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}]},
        ),
        "team-a",
        None,
        True,
    ),
]


@pytest.mark.parametrize(("spec", "namespace", "labels", "admitted"), ADMITS)
def test_a_listener_admits_routes_by_namespace_and_kind(
    spec: dict[str, Any], namespace: str, labels: dict[str, str] | None, admitted: bool
) -> None:
    assert listener_admits(spec, "infra", namespace, labels) is admitted


SELECTORS = [
    ({}, TEAM, True),
    ({"matchLabels": {"tier": "web"}}, TEAM, True),
    ({"matchLabels": {"tier": "db"}}, TEAM, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]}, TEAM, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]}, TEAM, False),
    ({"matchExpressions": [{"key": "gone", "operator": "NotIn", "values": ["x"]}]}, TEAM, True),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, TEAM, True),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, TEAM, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]}, TEAM, False),
]


@pytest.mark.parametrize(("selector", "labels", "matches"), SELECTORS)
def test_label_selectors_match_as_kubernetes_does(
    selector: dict[str, Any], labels: dict[str, str], matches: bool
) -> None:
    assert label_selector_matches(selector, labels) is matches


def gateway(*listeners: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "shared", "namespace": "infra"}, "spec": {"listeners": list(listeners)}}


def test_a_missing_gateway_is_a_problem_naming_the_annotation() -> None:
    problem = gateway_admission_problem(REF, None, "team-a", TEAM)
    assert problem is not None
    assert "infra/shared" in problem
    assert ANNOTATION_GATEWAY in problem
    assert "does not exist" in problem


def test_a_gateway_that_admits_no_listener_says_which_listeners_it_has() -> None:
    problem = gateway_admission_problem(
        REF, gateway(listener(), listener(name="tls", protocol="TCP")), "team-a", TEAM
    )
    assert problem is not None
    assert "'team-a'" in problem
    assert "http (HTTP, from Same)" in problem
    assert "tls (TCP, from Same)" in problem


def test_one_admitting_listener_is_enough() -> None:
    admitting = gateway(listener(), listener({"from": "All"}, name="public"))
    assert gateway_admission_problem(REF, admitting, "team-a", None) is None


def test_the_namespace_labels_are_needed_only_for_a_selector() -> None:
    assert needs_namespace_labels(gateway(listener(), listener(SELECT_WEB)))
    assert not needs_namespace_labels(gateway(listener({"from": "All"})))
    assert not needs_namespace_labels(None)


def test_the_route_attaches_to_the_shared_gateway_only() -> None:
    route: dict[str, Any] = {
        "metadata": {"name": "svc-httproute"},
        "spec": {"parentRefs": [{"name": "svc-gateway"}], "rules": []},
    }
    attached = attached_to_gateway(route, REF)
    assert attached is not None
    assert attached["spec"]["parentRefs"] == [{"name": "shared", "namespace": "infra"}]
    assert route["spec"]["parentRefs"] == [{"name": "svc-gateway"}]  # the input is not changed
    assert attached_to_gateway(None, REF) is None
