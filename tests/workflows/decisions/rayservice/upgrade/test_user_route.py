"""A user-owned HTTPRoute: raypilot finds the rules that point at this RayService's serve Services, patches
only their owned backendRefs (weights, the new cluster's added, the old one's removed) and the traffic-split
label, guarded by `test` operations; every other field and rule stays as the user wrote it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from models.traffic_refs import ANNOTATION_GATEWAY, ANNOTATION_HTTPROUTE, LABEL_TRAFFIC_SPLIT, NamespacedName
from raypilot.testing.json_patch import PatchRefused, apply_json_patch
from workflows.decisions.rayservice.upgrade.gateway import weights_from_http_route
from workflows.decisions.rayservice.upgrade.user_route import (
    RouteOwner,
    is_owned_backend,
    owned_rule_indexes,
    released_route_patch,
    route_for_status,
    route_gateway,
    user_route_patch,
    user_route_problem,
    user_route_ready,
)

OWNER = RouteOwner("svc", "serving", ("svc-bcdfg", "svc-hjklm"))
REF = NamespacedName("team-a", "api")
SHARED = NamespacedName("infra", "shared")


def backend(
    name: str, weight: int | None = None, namespace: str | None = "serving", **more: Any
) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "port": 8000, **more}
    if namespace is not None:
        found["namespace"] = namespace
    if weight is not None:
        found["weight"] = weight
    return found


def user_route(*rules: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "api", "namespace": "team-a", "resourceVersion": "7"}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": metadata,
        "spec": {
            "hostnames": ["api.example.com"],
            "parentRefs": [{"name": "shared", "namespace": "infra", "sectionName": "https"}],
            "rules": list(rules),
        },
    }


DOCS_RULE = {
    "matches": [{"path": {"type": "PathPrefix", "value": "/docs"}}],
    "backendRefs": [backend("docs", namespace="web")],
}
API_RULE = {
    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
    "filters": [
        {
            "type": "RequestHeaderModifier",
            "requestHeaderModifier": {"set": [{"name": "x-team", "value": "a"}]},
        }
    ],
    "timeouts": {"request": "30s"},
    "backendRefs": [backend("svc-serve-svc")],
}


@pytest.mark.parametrize(
    ("ref", "owned"),
    [
        (backend("svc-serve-svc"), True),  # the RayService-level serve Service: how a user marks the rule
        (backend("svc-bcdfg-serve-svc"), True),  # a known cluster's
        (backend("svc-zzzzz-serve-svc"), True),  # a generated cluster name raypilot may have forgotten
        (backend("svc-serve-svc", namespace="other"), False),
        (backend("svc-serve-svc", namespace=None), False),  # defaults to the route's namespace, team-a
        (backend("svc-serve-svc", kind="ServiceImport", group="multicluster.x-k8s.io"), False),
        (backend("svc-abcde-serve-svc"), False),  # a and e are not in the suffix alphabet
        (backend("svc2-serve-svc"), False),
        (backend("docs"), False),
    ],
)
def test_owned_backends_point_at_this_rayservices_serve_services(ref: dict[str, Any], owned: bool) -> None:
    assert is_owned_backend(ref, OWNER, "team-a") is owned


def test_the_owned_rules_are_those_holding_an_owned_backend() -> None:
    assert owned_rule_indexes(user_route(DOCS_RULE, API_RULE), OWNER) == [1]
    assert owned_rule_indexes(user_route(DOCS_RULE), OWNER) == []


SPLIT = [backend("svc-bcdfg-serve-svc", 70), backend("svc-hjklm-serve-svc", 30)]
AT_REST = [backend("svc-hjklm-serve-svc", 100)]

PATCHES = [
    # (the route's owned rule backends now, what raypilot wants, owned backends after, label after)
    (
        [backend("svc-serve-svc")],
        [backend("svc-bcdfg-serve-svc", 100)],
        [backend("svc-bcdfg-serve-svc", 100)],
        None,
    ),
    ([backend("svc-bcdfg-serve-svc", 100)], SPLIT, SPLIT, "in-progress"),  # the new cluster's added
    (
        SPLIT,
        [backend("svc-bcdfg-serve-svc", 40), backend("svc-hjklm-serve-svc", 60)],
        [backend("svc-bcdfg-serve-svc", 40), backend("svc-hjklm-serve-svc", 60)],
        "in-progress",
    ),
    (
        [backend("svc-bcdfg-serve-svc", 0), backend("svc-hjklm-serve-svc", 100)],
        AT_REST,
        AT_REST,
        None,
    ),  # the old one's removed
]


@pytest.mark.parametrize(("now", "wanted", "after", "label"), PATCHES)
def test_the_patch_changes_only_the_owned_backends_and_the_label(
    now: list[dict[str, Any]], wanted: list[dict[str, Any]], after: list[dict[str, Any]], label: str | None
) -> None:
    extra = backend("fallback", 1, namespace="web")  # the user's own backend in the owned rule stays first
    rule = {**copy.deepcopy(API_RULE), "backendRefs": [extra, *now]}
    labels = {"app": "api", LABEL_TRAFFIC_SPLIT: "in-progress"} if len(now) > 1 else {"app": "api"}
    route = user_route(DOCS_RULE, rule, labels=labels)
    patch = user_route_patch(route, OWNER, wanted)
    assert patch is not None
    patched = apply_json_patch(route, patch)
    expected = copy.deepcopy(route)
    expected["spec"]["rules"][1]["backendRefs"] = [extra, *after]
    expected["metadata"]["labels"] = {"app": "api", **({LABEL_TRAFFIC_SPLIT: label} if label else {})}
    assert patched == expected
    assert user_route_patch(patched, OWNER, wanted) is None  # once written, nothing more to do


def test_every_replaced_value_is_tested_first() -> None:
    route = user_route(DOCS_RULE, API_RULE)
    patch = user_route_patch(route, OWNER, SPLIT)
    assert patch is not None
    tests = [op for op in patch if op["op"] == "test"]
    replaced = [op for op in patch if op["op"] == "replace"]
    assert [op["path"] for op in tests] == [op["path"] for op in replaced] == ["/spec/rules/1/backendRefs"]
    changed_meanwhile = copy.deepcopy(route)
    changed_meanwhile["spec"]["rules"][1]["backendRefs"].append(backend("canary", 5, namespace="web"))
    with pytest.raises(PatchRefused):
        apply_json_patch(changed_meanwhile, patch)


def test_the_label_is_added_where_the_route_has_no_labels() -> None:
    patched = apply_json_patch(
        user_route(API_RULE), user_route_patch(user_route(API_RULE), OWNER, SPLIT) or []
    )
    assert patched["metadata"]["labels"] == {LABEL_TRAFFIC_SPLIT: "in-progress"}


def test_defaults_the_api_server_fills_in_are_no_difference() -> None:
    stored = [{**item, "group": "", "kind": "Service"} for item in SPLIT]
    route = user_route({**API_RULE, "backendRefs": stored}, labels={LABEL_TRAFFIC_SPLIT: "in-progress"})
    assert user_route_patch(route, OWNER, SPLIT) is None
    unweighted = user_route({**API_RULE, "backendRefs": [backend("svc-bcdfg-serve-svc")]})
    assert user_route_patch(unweighted, OWNER, [backend("svc-bcdfg-serve-svc", 1)]) is None


def test_every_owned_rule_gets_the_same_backends() -> None:
    second = {
        "matches": [{"path": {"type": "PathPrefix", "value": "/v2"}}],
        "backendRefs": [backend("svc-serve-svc")],
    }
    route = user_route(API_RULE, DOCS_RULE, second)
    patched = apply_json_patch(route, user_route_patch(route, OWNER, SPLIT) or [])
    assert patched["spec"]["rules"][0]["backendRefs"] == SPLIT
    assert patched["spec"]["rules"][2]["backendRefs"] == SPLIT
    assert patched["spec"]["rules"][1] == DOCS_RULE


def test_deletion_points_the_owned_rules_at_the_rayservice_serve_service_again() -> None:
    route = user_route(
        DOCS_RULE,
        {**API_RULE, "backendRefs": SPLIT},
        labels={LABEL_TRAFFIC_SPLIT: "in-progress", "app": "api"},
    )
    patched = apply_json_patch(route, released_route_patch(route, OWNER, 8000) or [])
    assert patched["spec"]["rules"][1]["backendRefs"] == [
        {"name": "svc-serve-svc", "port": 8000, "namespace": "serving"}
    ]
    assert patched["metadata"]["labels"] == {"app": "api"}
    assert patched["spec"]["rules"][0] == DOCS_RULE
    assert released_route_patch(patched, OWNER, 8000) is None


def test_the_status_reads_the_weights_of_the_owned_rule() -> None:
    route = user_route(DOCS_RULE, {**API_RULE, "backendRefs": SPLIT})
    assert weights_from_http_route(route_for_status(route, OWNER), "svc-bcdfg", "svc-hjklm") == (70, 30)
    assert route_for_status(user_route(DOCS_RULE), OWNER) is None
    assert route_for_status(None, OWNER) is None


PROBLEMS = [
    (None, None, "does not exist"),
    (user_route(DOCS_RULE), None, "no rule with a backendRef to Service serving/svc-serve-svc"),
    (user_route(API_RULE), NamespacedName("infra", "other"), "does not attach to Gateway infra/other"),
    ({**user_route(API_RULE), "spec": {"rules": [API_RULE]}}, None, "names no Gateway"),
]


@pytest.mark.parametrize(("route", "gateway", "says"), PROBLEMS)
def test_a_route_raypilot_cannot_steer_is_a_problem_naming_it(
    route: dict[str, Any] | None, gateway: NamespacedName | None, says: str
) -> None:
    problem = user_route_problem(REF, route, OWNER, gateway)
    assert problem is not None
    assert says in problem
    assert "team-a/api" in problem
    assert ANNOTATION_HTTPROUTE in problem
    if gateway is not None:
        assert ANNOTATION_GATEWAY in problem


def test_a_steerable_route_is_no_problem() -> None:
    assert user_route_problem(REF, user_route(API_RULE), OWNER, SHARED) is None
    assert user_route_problem(REF, user_route(API_RULE), OWNER, None) is None


def test_readiness_is_the_parent_status_for_the_routes_gateway() -> None:
    route = user_route(API_RULE)
    assert route_gateway(route, None) == SHARED  # the first Gateway parentRef
    assert route_gateway(route, NamespacedName("infra", "x")) == NamespacedName("infra", "x")
    accepted = [{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "True"}]
    route["status"] = {
        "parents": [{"parentRef": {"name": "shared", "namespace": "infra"}, "conditions": accepted}]
    }
    assert user_route_ready(route, SHARED)
    assert not user_route_ready(route, NamespacedName("infra", "other"))
    assert not user_route_ready(route, None)
