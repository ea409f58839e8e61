"""Whether an incremental upgrade can steer its traffic through a shared Gateway and/or a user-owned HTTPRoute
(`raypilot.io/gateway`, `raypilot.io/httproute`), and how the RayService says when it cannot.

Existence and admission are known only at run time. While one is wrong, raypilot creates and patches nothing
for the route, the upgrade's traffic does not move (its Gateway and route are not ready), the raypilot
condition `TrafficRouteNotUsable` is True with a message naming the object and the annotation, and one
Warning Event with the same reason is recorded per message. The workflow watches the objects meanwhile; the
condition goes as soon as they are fixed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from models.meta import ConditionStatus, find_condition
from models.rayservice import RayServiceStatuses
from models.traffic_refs import NamespacedName, shared_gateway_of, user_route_of
from workflows.decisions.rayservice.conditions import RayServiceEvent, with_condition, without_condition
from workflows.decisions.rayservice.upgrade.shared_gateway import gateway_admission_problem
from workflows.decisions.rayservice.upgrade.user_route import RouteOwner, route_gateway, user_route_problem

__all__ = [
    "REASON_GATEWAY_NOT_USABLE",
    "REASON_HTTPROUTE_NOT_USABLE",
    "TRAFFIC_ROUTE_NOT_USABLE_CONDITION",
    "RouteProblem",
    "TrafficRefs",
    "traffic_route_problem",
    "with_traffic_route_condition",
]

TRAFFIC_ROUTE_NOT_USABLE_CONDITION: Final = "TrafficRouteNotUsable"
REASON_GATEWAY_NOT_USABLE: Final = "SharedGatewayNotUsable"
REASON_HTTPROUTE_NOT_USABLE: Final = "HTTPRouteNotUsable"


@dataclass(frozen=True)
class TrafficRefs:
    """The shared Gateway and the user-owned route a RayService names (either may be absent)."""

    gateway: NamespacedName | None = None
    route: NamespacedName | None = None

    @classmethod
    def of(cls, annotations: Mapping[str, str] | None) -> TrafficRefs:
        return cls(shared_gateway_of(annotations), user_route_of(annotations))

    @property
    def any(self) -> bool:
        return self.gateway is not None or self.route is not None


@dataclass(frozen=True)
class RouteProblem:
    reason: str
    message: str


def traffic_route_problem(
    refs: TrafficRefs,
    owner: RouteOwner,
    route: Mapping[str, Any] | None,
    gateway: Mapping[str, Any] | None,
    namespace_labels: Mapping[str, str] | None,
) -> RouteProblem | None:
    """What keeps the upgrade from steering traffic: the user's route (missing, no owned rule, not attached
    to the annotated Gateway), then the Gateway (missing, not admitting the route's namespace). `route` is the
    user's route (with `raypilot.io/httproute`), `gateway` the Gateway it attaches to."""
    route_namespace = owner.namespace
    if refs.route is not None:
        problem = user_route_problem(refs.route, route, owner, refs.gateway)
        if problem is not None:
            return RouteProblem(REASON_HTTPROUTE_NOT_USABLE, problem)
        route_namespace = refs.route.namespace
    gateway_ref = route_gateway(route, refs.gateway) if refs.route is not None else refs.gateway
    if gateway_ref is None:
        return None
    problem = gateway_admission_problem(gateway_ref, gateway, route_namespace, namespace_labels)
    return RouteProblem(REASON_GATEWAY_NOT_USABLE, problem) if problem is not None else None


def with_traffic_route_condition(
    status: RayServiceStatuses, problem: RouteProblem | None, now: datetime
) -> tuple[RayServiceStatuses, list[RayServiceEvent]]:
    """The status with `TrafficRouteNotUsable` set (True, with the problem) or removed; a Warning Event when
    the condition appears or its message changes, never on every pass."""
    current = find_condition(status.conditions, TRAFFIC_ROUTE_NOT_USABLE_CONDITION)
    if problem is None:
        if current is None:
            return status, []
        return without_condition(status, TRAFFIC_ROUTE_NOT_USABLE_CONDITION), []
    if current is not None and current.message == problem.message:
        return status, []
    result = with_condition(
        status, TRAFFIC_ROUTE_NOT_USABLE_CONDITION, ConditionStatus.TRUE, problem.reason, problem.message, now
    )
    return result, [RayServiceEvent("Warning", problem.reason, problem.message)]
