"""What keeps an upgrade from steering traffic through a shared Gateway or a user's route, in order, and the
`TrafficRouteNotUsable` condition with one Warning Event per message."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from models.meta import find_condition
from models.rayservice import RayServiceStatuses
from models.traffic_refs import ANNOTATION_GATEWAY, ANNOTATION_HTTPROUTE, NamespacedName
from workflows.decisions.rayservice.upgrade.traffic_route import (
    REASON_GATEWAY_NOT_USABLE,
    REASON_HTTPROUTE_NOT_USABLE,
    TRAFFIC_ROUTE_NOT_USABLE_CONDITION,
    RouteProblem,
    TrafficRefs,
    traffic_route_problem,
    with_traffic_route_condition,
)
from workflows.decisions.rayservice.upgrade.user_route import RouteOwner

OWNER = RouteOwner("svc", "serving")
SHARED = NamespacedName("infra", "shared")
ROUTE = NamespacedName("team-a", "api")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def gateway(source: str) -> dict[str, Any]:
    listener = {"name": "http", "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": source}}}
    return {"metadata": {"name": "shared", "namespace": "infra"}, "spec": {"listeners": [listener]}}


def route(*backends: str, parent: str = "shared") -> dict[str, Any]:
    refs = [{"name": name, "namespace": "serving", "port": 8000} for name in backends]
    return {
        "metadata": {"name": "api", "namespace": "team-a"},
        "spec": {"parentRefs": [{"name": parent, "namespace": "infra"}], "rules": [{"backendRefs": refs}]},
    }


CASES = [
    # (refs, the user's route, the Gateway, reason expected or None)
    (TrafficRefs(gateway=SHARED), None, None, REASON_GATEWAY_NOT_USABLE),
    (TrafficRefs(gateway=SHARED), None, gateway("Same"), REASON_GATEWAY_NOT_USABLE),  # serving != infra
    (TrafficRefs(gateway=SHARED), None, gateway("All"), None),
    (TrafficRefs(route=ROUTE), None, None, REASON_HTTPROUTE_NOT_USABLE),
    (TrafficRefs(route=ROUTE), route("docs"), gateway("All"), REASON_HTTPROUTE_NOT_USABLE),
    # The route is checked first, then the Gateway it attaches to (its first parentRef).
    (TrafficRefs(route=ROUTE), route("svc-serve-svc"), None, REASON_GATEWAY_NOT_USABLE),
    (TrafficRefs(route=ROUTE), route("svc-serve-svc"), gateway("Same"), REASON_GATEWAY_NOT_USABLE),
    (TrafficRefs(route=ROUTE), route("svc-serve-svc"), gateway("All"), None),
    (
        TrafficRefs(SHARED, ROUTE),
        route("svc-serve-svc", parent="other"),
        gateway("All"),
        REASON_HTTPROUTE_NOT_USABLE,
    ),
    (TrafficRefs(SHARED, ROUTE), route("svc-serve-svc"), gateway("All"), None),
]


@pytest.mark.parametrize(("refs", "user_route", "found_gateway", "reason"), CASES)
def test_the_first_problem_names_what_is_wrong(
    refs: TrafficRefs,
    user_route: dict[str, Any] | None,
    found_gateway: dict[str, Any] | None,
    reason: str | None,
) -> None:
    problem = traffic_route_problem(refs, OWNER, user_route, found_gateway, None)
    assert (problem.reason if problem is not None else None) == reason
    if problem is not None:
        named = ANNOTATION_HTTPROUTE if reason == REASON_HTTPROUTE_NOT_USABLE else ANNOTATION_GATEWAY
        assert named in problem.message


def test_the_refs_come_from_the_annotations() -> None:
    refs = TrafficRefs.of({ANNOTATION_GATEWAY: "infra/shared"})
    assert refs == TrafficRefs(gateway=SHARED)
    assert refs.any
    assert not TrafficRefs.of({}).any


def test_the_condition_comes_with_one_event_per_message_and_goes_when_fixed() -> None:
    first = RouteProblem(REASON_GATEWAY_NOT_USABLE, "Gateway infra/shared does not exist")
    status, events = with_traffic_route_condition(RayServiceStatuses(), first, NOW)
    condition = find_condition(status.conditions, TRAFFIC_ROUTE_NOT_USABLE_CONDITION)
    assert condition is not None
    assert (condition.status, condition.reason, condition.message) == ("True", first.reason, first.message)
    assert [(event.type, event.reason) for event in events] == [("Warning", REASON_GATEWAY_NOT_USABLE)]
    again, repeated = with_traffic_route_condition(status, first, NOW)
    assert again == status
    assert repeated == []
    other = RouteProblem(REASON_GATEWAY_NOT_USABLE, "Gateway infra/shared admits no HTTPRoute")
    _, changed = with_traffic_route_condition(status, other, NOW)
    assert [event.message for event in changed] == [other.message]
    cleared, none = with_traffic_route_condition(status, None, NOW)
    assert find_condition(cleared.conditions, TRAFFIC_ROUTE_NOT_USABLE_CONDITION) is None
    assert none == []
