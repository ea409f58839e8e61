"""What the pre-traffic features of an incremental upgrade (headerCanary, steps[].mirror) share: the pending
cluster's backend in the HTTPRoute's weighted rule, and whether its first capacity step is taken while paused.

Both features send requests to the pending cluster before any weight moves, so both need a pending backend
in KubeRay's weighted rule (`rules[0]`) and no rollback running; and both need replicas before any traffic,
which a pending cluster at target_capacity 0 held by a pause would never get.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.meta import is_condition_true
from models.rayservice import RayServiceConditionType, RayServiceStatuses

__all__ = ["pending_backend_before_traffic", "pending_cluster_untouched"]


def _rolling_back(status: RayServiceStatuses) -> bool:
    return is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)


def pending_backend_before_traffic(
    route: Mapping[str, Any] | None, status: RayServiceStatuses, pending_cluster: str
) -> Mapping[str, Any] | None:
    """The pending cluster's backendRef in the route's weighted rule, when a pre-traffic feature may use it
    now: a route with rules, a pending cluster listed in `rules[0]`, no rollback running (else None)."""
    if route is None or not pending_cluster or _rolling_back(status):
        return None
    rules = (route.get("spec") or {}).get("rules") or []
    if not rules:
        return None
    return next(
        (ref for ref in rules[0].get("backendRefs") or [] if pending_cluster in str(ref.get("name") or "")),
        None,
    )


def pending_cluster_untouched(status: RayServiceStatuses) -> bool:
    """A pending cluster exists, no rollback runs, and it has neither capacity nor traffic yet: the moment a
    pre-traffic feature takes its first capacity step even while paused."""
    if _rolling_back(status):
        return False
    pending = status.pending_service_status
    untouched = not pending.target_capacity and not pending.traffic_routed_percent
    return bool(pending.ray_cluster_name) and untouched
