"""The HTTPRoute and the status the tables of the pre-traffic features (headerCanary, steps[].mirror) start
from: KubeRay's weighted rule over `<rc>-serve-svc` backends, and an upgrade with a pending cluster."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from models.meta import ConditionStatus
from models.rayservice import RayServiceConditionType, RayServiceStatus, RayServiceStatuses
from workflows.decisions.rayservice.conditions import set_condition

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def route(*backends: tuple[str, int]) -> dict[str, Any]:
    refs = [
        {"name": f"{name}-serve-svc", "namespace": "ns", "port": 8000, "weight": w} for name, w in backends
    ]
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": refs}
    return {"spec": {"parentRefs": [{"name": "svc-gateway"}], "rules": [rule]}}


def status(
    pending: str = "new", capacity: int | None = 0, traffic: int | None = 0, rollback: bool = False
) -> RayServiceStatuses:
    result = RayServiceStatuses(
        active_service_status=RayServiceStatus(ray_cluster_name="old"),
        pending_service_status=RayServiceStatus(
            ray_cluster_name=pending, target_capacity=capacity, traffic_routed_percent=traffic
        ),
    )
    if rollback:
        result.conditions = set_condition(
            result.conditions,
            RayServiceConditionType.ROLLBACK_IN_PROGRESS,
            ConditionStatus.TRUE,
            "r",
            "m",
            1,
            T0,
        )
    return result
