"""The RayService status after one reconcile pass: weights read back, promotion, rollback completion, a new
pending cluster, serve endpoints, conditions and serviceStatus.

KubeRay counterparts (rayservice_controller.go):
- `calculate_status`: calculateStatus, in the same order
- `should_promote`: reconcilePromotionAndServingStatus's decision (and its consistency checks)
- `serve_endpoint_services`: the Services whose ready endpoints make numServeEndpoints

Where raypilot differs: KubeRay panics when the RayService-level Services point at a cluster that is neither
active nor pending; `should_promote` raises ValueError instead. The random pending-cluster name comes from the
`rand` argument (the workflow passes workflow.random()). `suppressed_goal_hash` carries the `abort` control.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from models.meta import is_condition_true
from models.naming import generated_cluster_name, serve_service_name
from models.operator import OperatorConfig
from models.raycluster import RayCluster, RayClusterConditionType, RayClusterStatus
from models.rayservice import (
    AppStatus,
    RayService,
    RayServiceConditionType,
    RayServiceStatus,
    RayServiceStatuses,
)
from workflows.decisions.rayservice.cluster import (
    ServiceClusters,
    is_incremental_upgrade_enabled,
    should_prepare_new_cluster,
)
from workflows.decisions.rayservice.conditions import RayServiceEvent, calculate_conditions, service_status
from workflows.decisions.rayservice.upgrade.gateway import weights_from_http_route
from workflows.decisions.rayservice.upgrade.incremental import (
    complete_incremental_rollback,
    initial_pending_target_capacity,
    is_incremental_upgrade_complete,
    should_complete_incremental_rollback,
)

__all__ = [
    "StatusInputs",
    "StatusOutcome",
    "calculate_status",
    "rayservice_serve_service_name",
    "serve_endpoint_services",
    "should_promote",
]


def rayservice_serve_service_name(rayservice: RayService) -> str:
    """RayServiceServeServiceNamespacedName: spec.serveService's name when set, else `<rs>-serve-svc`."""
    custom = rayservice.spec.serve_service
    custom_name = ((custom or {}).get("metadata") or {}).get("name") or ""
    return str(custom_name) or serve_service_name(rayservice.metadata.name)


def serve_endpoint_services(
    rayservice: RayService, active: RayCluster | None, pending: RayCluster | None, config: OperatorConfig
) -> list[str]:
    """The Services whose ready EndpointSlice endpoints are summed into numServeEndpoints: the RayService's
    serve Service; during an incremental upgrade the active and pending clusters' own `<rc>-serve-svc`
    instead."""
    if not is_incremental_upgrade_enabled(rayservice.spec, config):
        return [rayservice_serve_service_name(rayservice)]
    names = [
        serve_service_name(active.metadata.name) if active else rayservice_serve_service_name(rayservice)
    ]
    if pending is not None:
        names.append(serve_service_name(pending.metadata.name))
    return names


def should_promote(
    status: RayServiceStatuses, services_cluster: str, incremental: bool, pending_cluster_exists: bool
) -> bool:
    """reconcilePromotionAndServingStatus: make the pending cluster the active one?

    Blue/green: once the RayService-level Services select it. Incremental: once the upgrade is complete (not
    during a rollback), or at first deployment (no active cluster yet, upgrade not in progress).
    """
    active_name = status.active_service_status.ray_cluster_name
    pending_name = status.pending_service_status.ray_cluster_name
    if services_cluster not in (active_name, pending_name):
        raise ValueError("clusterName from services is not equal to pendingCluster or activeCluster")
    if not incremental:
        return active_name != services_cluster
    if is_condition_true(status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS):
        rolling_back = is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
        return not rolling_back and is_incremental_upgrade_complete(status, pending_cluster_exists)
    return active_name == "" and pending_name != ""


@dataclass(frozen=True)
class StatusOutcome:
    status: RayServiceStatuses
    events: list[RayServiceEvent] = field(default_factory=list)
    promoted: bool = False
    is_pending_cluster_serving: bool = False
    new_pending_cluster: str | None = None  # a name chosen this pass: create that RayCluster next


def _cluster_status(cluster: RayCluster | None) -> RayClusterStatus:
    if cluster is None or cluster.status is None:
        return RayClusterStatus()
    return cluster.status.model_copy(deep=True)


def _read_back_weights(
    status: RayServiceStatuses, http_route: Mapping[str, Any] | None, pending_exists: bool, now: datetime
) -> None:
    # Weights are read from the route as written, and a changed weight stamps lastTrafficMigratedTime.
    active, pending = status.active_service_status, status.pending_service_status
    old_active = -1 if active.traffic_routed_percent is None else active.traffic_routed_percent
    old_pending = -1 if pending.traffic_routed_percent is None else pending.traffic_routed_percent
    active_weight, pending_weight = weights_from_http_route(
        http_route, active.ray_cluster_name, pending.ray_cluster_name
    )
    if active_weight >= 0:
        active.traffic_routed_percent = active_weight
        if active_weight != old_active:
            active.last_traffic_migrated_time = now
    if pending_weight >= 0 and pending_exists:
        pending.traffic_routed_percent = pending_weight
        if pending_weight != old_pending:
            pending.last_traffic_migrated_time = now


@dataclass(frozen=True)
class StatusInputs:
    """What one pass observed and did, for `calculate_status`.

    `services_cluster`: the cluster the RayService-level head and serve Services select after this pass
    (None when they were not reconciled because neither cluster was ready). `serve_endpoints`: ready endpoint
    count by Service name for (at least) `serve_endpoint_services(...)`. `http_route`: the route as written
    this pass (incremental upgrades). Applications are None when that cluster's Serve was not reconciled.
    `rand` draws a new pending cluster's name (the workflow passes workflow.random()).
    """

    rayservice: RayService
    config: OperatorConfig
    now: datetime
    rand: random.Random
    active: RayCluster | None = None
    pending: RayCluster | None = None
    active_applications: Mapping[str, AppStatus] | None = None
    pending_applications: Mapping[str, AppStatus] | None = None
    services_cluster: str | None = None
    serve_endpoints: Mapping[str, int] = field(default_factory=dict)
    http_route: Mapping[str, Any] | None = None
    suppressed_goal_hash: str | None = None


def calculate_status(inputs: StatusInputs) -> StatusOutcome:
    """calculateStatus for one pass."""
    rayservice, config, now, rand = inputs.rayservice, inputs.config, inputs.now, inputs.rand
    active, pending, services_cluster = inputs.active, inputs.pending, inputs.services_cluster
    incremental = is_incremental_upgrade_enabled(rayservice.spec, config)
    status = rayservice.status.model_copy(deep=True)
    status.observed_generation = rayservice.metadata.generation or 0
    status.active_service_status.ray_cluster_status = _cluster_status(active)
    status.pending_service_status.ray_cluster_status = _cluster_status(pending)
    status.active_service_status.application_statuses = dict(inputs.active_applications or {})
    status.pending_service_status.application_statuses = dict(inputs.pending_applications or {})

    promoted = is_pending_cluster_serving = False
    if services_cluster is not None:
        if incremental:
            _read_back_weights(status, inputs.http_route, pending is not None, now)
        old_pending_name = status.pending_service_status.ray_cluster_name
        promoted = should_promote(status, services_cluster, incremental, pending is not None)
        if promoted:
            status.active_service_status = status.pending_service_status
            status.pending_service_status = RayServiceStatus()
        is_pending_cluster_serving = services_cluster == old_pending_name

    pending_for_decisions = pending
    if is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS):
        head_ready = (
            pending is not None
            and pending.status is not None
            and is_condition_true(pending.status.conditions, RayClusterConditionType.HEAD_POD_READY)
        )
        if should_complete_incremental_rollback(
            status.active_service_status, status.pending_service_status, head_ready
        ):
            status = complete_incremental_rollback(status, now)
            pending_for_decisions = None

    new_pending: str | None = None
    current = rayservice.model_copy(update={"status": status})
    if should_prepare_new_cluster(
        ServiceClusters(
            rayservice=current,
            active=active,
            pending=pending_for_decisions,
            pending_serving=is_pending_cluster_serving,
            config=config,
            suppressed_goal_hash=inputs.suppressed_goal_hash,
        )
    ):
        new_pending = generated_cluster_name(rayservice.metadata.name, rand)
        status.pending_service_status = RayServiceStatus(ray_cluster_name=new_pending)
        if incremental:
            capacity = initial_pending_target_capacity(status)
            if capacity is not None:
                status.pending_service_status.target_capacity = capacity

    counted = serve_endpoint_services(rayservice, active, pending_for_decisions, config)
    status.num_serve_endpoints = sum(inputs.serve_endpoints.get(name, 0) for name in dict.fromkeys(counted))

    status, events = calculate_conditions(status, rayservice.metadata.annotations, now)
    status.service_status = service_status(status.conditions)
    return StatusOutcome(status, events, promoted, is_pending_cluster_serving, new_pending)
