"""raypilot.io/rollout `headerCanary` (issue #18, incremental upgrades only): requests carrying a given header
reach the pending cluster before any weighted traffic, so a team can try the new version by hand.

The HTTPRoute keeps KubeRay's weighted rule first (the weights are read back from `rules[0]`) and gains a
second rule with the same PathPrefix "/" plus an Exact header match whose only backend is the pending
cluster's `<rc>-serve-svc`. Gateway API gives a rule with more header matches precedence over one with fewer
at equal path (HTTPRouteRule precedence), so those requests go to the pending cluster whatever the weights.
The rule exists while a pending cluster exists and no rollback runs: it goes at promotion (no pending cluster)
and at abort or any rollback (the status turns RollbackInProgress first).

Header requests need replicas: a pending cluster starts at target_capacity 0, and a plan that pauses before
any traffic would hold it there. With a header canary the pending cluster's first capacity step (KubeRay's:
up to maxSurgePercent) is taken even while paused (`header_canary_needs_capacity`), so it runs replicas
before any weighted traffic; the next steps wait for resume as usual.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from models.rayservice import RayServiceStatuses
from models.rollout import HeaderCanary
from workflows.decisions.rayservice.upgrade.pending_route import (
    pending_backend_before_traffic,
    pending_cluster_untouched,
)

__all__ = ["header_canary_needs_capacity", "header_canary_rule", "with_header_canary"]


def header_canary_rule(canary: HeaderCanary, pending_backend: Mapping[str, Any]) -> dict[str, Any]:
    backend = {key: value for key, value in pending_backend.items() if key != "weight"}
    return {
        "matches": [
            {
                "path": {"type": "PathPrefix", "value": "/"},
                "headers": [{"type": "Exact", "name": canary.name, "value": canary.value}],
            }
        ],
        "backendRefs": [{**backend, "weight": 1}],
    }


def with_header_canary(
    route: dict[str, Any] | None,
    status: RayServiceStatuses,
    pending_cluster: str,
    canary: HeaderCanary | None,
) -> dict[str, Any] | None:
    """The desired route with the header rule added when it applies now (else the route unchanged)."""
    if canary is None:
        return route
    pending = pending_backend_before_traffic(route, status, pending_cluster)
    if route is None or pending is None:
        return route
    result = copy.deepcopy(route)
    result["spec"]["rules"] = [*result["spec"]["rules"], header_canary_rule(canary, pending)]
    return result


def header_canary_needs_capacity(status: RayServiceStatuses, canary: HeaderCanary | None) -> bool:
    """Take the pending cluster's first capacity step even while paused: a header canary is set, no rollback
    runs, and the pending cluster has neither capacity nor traffic yet."""
    return canary is not None and pending_cluster_untouched(status)
