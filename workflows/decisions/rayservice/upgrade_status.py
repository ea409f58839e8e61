"""Upgrade bookkeeping in the RayService status: the target capacities' defaults and when an aborted
NewCluster upgrade ends."""

from __future__ import annotations

from models.meta import is_condition_true
from models.rayservice import RayServiceConditionType, RayServiceStatuses


def default_target_capacities(status: RayServiceStatuses) -> RayServiceStatuses:
    """reconcileServeTargetCapacity's defaults, written into the status: an unset active targetCapacity is
    100 and an unset pending one 0."""
    active, pending = status.active_service_status, status.pending_service_status
    if active.target_capacity is not None and pending.target_capacity is not None:
        return status
    result = status.model_copy(deep=True)
    if result.active_service_status.target_capacity is None:
        result.active_service_status.target_capacity = 100
    if result.pending_service_status.target_capacity is None:
        result.pending_service_status.target_capacity = 0
    return result


def should_finish_aborted_upgrade(status: RayServiceStatuses, incremental: bool) -> bool:
    """A NewCluster upgrade aborted by the `abort` control ends at once: no traffic ever reached the pending
    cluster, so it is dropped (it dangles and is deleted after the deletion delay). An incremental one rolls
    back step by step instead."""
    return (
        not incremental
        and is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
        and bool(status.pending_service_status.ray_cluster_name)
    )
