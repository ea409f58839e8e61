"""raypilot.io/rollout `steps[].mirror` (issue #34, incremental upgrades only): a share of the requests is
copied to the pending cluster, its responses discarded, before any weight moves (Argo Rollouts'
setMirrorRoute, Flagger's mirroring).

The copy is the Gateway's: the HTTPRoute's weighted rule (`rules[0]`, the one KubeRay builds) gains a
`RequestMirror` filter whose backendRef is the pending cluster's `<rc>-serve-svc` and whose `percent` is the
step's. A step `{mirror: P}` turns it on (or changes it) once the plan reaches that step; a step with
`mirror: 0`, the next step with `traffic`, the end of the plan, `promote`, `abort` and any rollback end it.

Mirrored requests need replicas: as for a header canary, the pending cluster's first capacity step (up to
maxSurgePercent) is taken even while an indefinite pause holds the plan (`mirror_needs_capacity`).

While a mirror is on, the raypilot condition `RolloutMirror` (True) says how much goes where; a Normal Event
`RolloutMirror` marks each change, `RolloutMirrorEnded` its end.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from models.meta import ConditionStatus
from models.rayservice import RayServiceStatuses
from models.rollout import RolloutStep
from workflows.decisions.rayservice.conditions import RayServiceEvent, with_condition, without_condition
from workflows.decisions.rayservice.upgrade.pending_route import (
    pending_backend_before_traffic,
    pending_cluster_untouched,
)

__all__ = [
    "ROLLOUT_MIRROR_CONDITION",
    "mirror_filter",
    "mirror_needs_capacity",
    "mirror_percent",
    "with_mirror",
    "with_mirror_condition",
]

ROLLOUT_MIRROR_CONDITION: Final = "RolloutMirror"
REQUEST_MIRROR: Final = "RequestMirror"


def mirror_percent(steps: Sequence[RolloutStep], index: int | None) -> int:
    """The mirror in effect while the plan is at step `index` (None: no plan walked, or it is complete):
    the newest `mirror` of steps[0..index], ended by any later step with traffic."""
    if index is None:
        return 0
    percent = 0
    for step in steps[: index + 1]:
        if step.traffic is not None:
            percent = 0
        if step.mirror is not None:
            percent = step.mirror
    return percent


def mirror_filter(pending_backend: Mapping[str, Any], percent: int) -> dict[str, Any]:
    """The RequestMirror filter to the pending backend (its Service name, namespace and port). Group and kind
    are written as the Gateway API CRD defaults them, so the route read back equals the one written."""
    backend = {
        "group": "",
        "kind": "Service",
        "name": pending_backend.get("name"),
        "namespace": pending_backend.get("namespace"),
        "port": pending_backend.get("port"),
    }
    return {"type": REQUEST_MIRROR, "requestMirror": {"backendRef": backend, "percent": percent}}


def with_mirror(
    route: dict[str, Any] | None, status: RayServiceStatuses, pending_cluster: str, percent: int
) -> dict[str, Any] | None:
    """The desired route with the mirror filter on its weighted rule when a mirror is on now (else the route
    unchanged): a pending backend in that rule, no rollback running."""
    pending = None if percent <= 0 else pending_backend_before_traffic(route, status, pending_cluster)
    if route is None or pending is None:
        return route
    result = copy.deepcopy(route)
    weighted = result["spec"]["rules"][0]
    weighted["filters"] = [*(weighted.get("filters") or []), mirror_filter(pending, percent)]
    return result


def mirror_needs_capacity(status: RayServiceStatuses, percent: int) -> bool:
    """Take the pending cluster's first capacity step even while paused: a mirror is on, no rollback runs,
    and the pending cluster has neither capacity nor traffic yet."""
    return percent > 0 and pending_cluster_untouched(status)


def with_mirror_condition(
    status: RayServiceStatuses, before: int, after: int, cluster: str, now: datetime
) -> tuple[RayServiceStatuses, list[RayServiceEvent]]:
    """The condition `RolloutMirror` and the Event of a change of the mirror from `before` to `after`
    percent (to `cluster`); the status unchanged and no Event when nothing changed."""
    if before == after:
        return status, []
    if after <= 0:
        message = "Mirroring ended: no request is copied to the new cluster any more."
        return without_condition(status, ROLLOUT_MIRROR_CONDITION), [
            RayServiceEvent("Normal", "RolloutMirrorEnded", message)
        ]
    message = (
        f"{after} % of the requests are mirrored to RayCluster {cluster} (its responses are discarded; "
        "the weights do not change)"
    )
    updated = with_condition(
        status, ROLLOUT_MIRROR_CONDITION, ConditionStatus.TRUE, "Mirroring", message, now
    )
    return updated, [RayServiceEvent("Normal", "RolloutMirror", message[0].upper() + message[1:] + ".")]
