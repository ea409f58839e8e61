"""The NewClusterWithIncrementalUpgrade parts of a RayService pass (rayservice_controller.go steps 10, 12's
target-capacity step, and 13): the rollback state, one target_capacity step, the per-cluster serve Services,
the Gateway and the weighted HTTPRoute.

Decisions are KubeRay's (workflows/decisions/incremental.py, gateway.py) with raypilot's event-driven
refinements: a capacity step waits until the cluster gaining capacity runs its current target capacity, and
the next traffic step is due exactly intervalSeconds after the previous one (the pass returns that instant
for the workflow's durable timer).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.hashing import cluster_spec_hash
    from models.meta import is_condition_true
    from models.naming import ANNOTATION_HASH, gateway_name, http_route_name
    from models.raycluster import RayCluster
    from models.rayservice import RayService, RayServiceConditionType, RayServiceStatuses
    from models.rollout import HeaderCanary
    from workflows.decisions.rayservice.cluster import cluster_upgrade_options
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.rayservice.serve import target_capacity_config
    from workflows.decisions.rayservice.services import per_cluster_serve_service_to_create
    from workflows.decisions.rayservice.upgrade.controls import upgrade_detail_line
    from workflows.decisions.rayservice.upgrade.gateway import (
        desired_http_route,
        gateway_manifest,
        gateway_update,
        http_route_update,
        is_gateway_ready,
        is_http_route_ready,
    )
    from workflows.decisions.rayservice.upgrade.header_canary import (
        header_canary_needs_capacity,
        with_header_canary,
    )
    from workflows.decisions.rayservice.upgrade.incremental import (
        REASON_ROLLBACK_IMPOSSIBLE,
        TrafficMoment,
        TrafficStep,
        capacity_step,
        rollback_state,
        target_capacity_update_needed,
    )
    from workflows.decisions.rayservice.upgrade.mirror import mirror_needs_capacity, with_mirror
    from workflows.decisions.rayservice.upgrade_status import default_target_capacities
    from workflows.decisions.rayservice.watches import (
        Watch,
        view_key,
    )
    from workflows.rayservice.part import PassContext, RayServicePart
    from workflows.rayservice.shared_routing import SharedRouting
    from workflows.rayservice.world import dashboard_target

__all__ = ["IncrementalUpgrade"]


def _upgrading(status: RayServiceStatuses) -> bool:
    return is_condition_true(status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS)


def _rolling_back(status: RayServiceStatuses) -> bool:
    return is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)


class IncrementalUpgrade(RayServicePart):
    # The traffic step this reconcile decided, if any.
    traffic: TrafficStep | None = None
    # raypilot.io/rollout headerCanary for this pass (None without it):
    # decisions/rayservice/upgrade/header_canary.py.
    header_canary: HeaderCanary | None = None
    # raypilot.io/rollout (rollout.py): the step plan's traffic ceiling and the end of its timed pause.
    plan_target: int | None = None
    plan_wake_at: datetime | None = None

    def __init__(self, context: PassContext) -> None:
        super().__init__(context)
        # raypilot.io/gateway, raypilot.io/httproute: the route through a shared Gateway or a user's route.
        self.routing = SharedRouting(context)

    # ---- step 10: rollback state -------------------------------------------------------------------------

    async def reconcile_rollback(
        self, rayservice: RayService, active: RayCluster | None, pending: RayCluster | None, now: datetime
    ) -> list[RayServiceEvent]:
        """reconcileRollbackState while upgrading: the goal back at the active cluster's spec (or a third
        spec) rolls back; the goal at the pending cluster's spec cancels a rollback."""
        if not _upgrading(self.state.status):
            return []
        if active is None:
            message = "Active RayCluster is missing during an incremental upgrade; rollback is impossible."
            return [RayServiceEvent("Warning", REASON_ROLLBACK_IMPOSSIBLE, message)]
        if pending is None:
            return []
        status = rollback_state(
            self.state.status,
            cluster_spec_hash(rayservice.spec.ray_cluster_config),
            active.metadata.annotations.get(ANNOTATION_HASH, ""),
            pending.metadata.annotations.get(ANNOTATION_HASH, ""),
            now,
            self.state.controls.aborted_goal_hash,
        )
        if status != self.state.status:
            await self.commit(status, [])
        return []

    # ---- step 12: one target_capacity step ----------------------------------------------------------------

    async def step_capacity(
        self,
        rayservice: RayService,
        clusters: dict[str, RayCluster | None],
        pending_ready: bool,
        active_ready: bool,
    ) -> bool:
        """checkIfNeedTargetCapacityUpdate, then the next reconcileServeTargetCapacity step (pending first),
        once the cluster gaining capacity runs its current target. True when a step was PUT."""
        state = self.state
        if not _upgrading(state.status):
            return False
        needed, _reason = target_capacity_update_needed(
            state.status, *self.gateway_and_route_ready(rayservice)
        )
        if not needed:
            return False
        status = default_target_capacities(state.status)
        gaining_ready = active_ready if _rolling_back(status) else pending_ready
        step = capacity_step(
            status,
            cluster_upgrade_options(rayservice.spec),
            gaining_ready,
            paused=state.controls.paused
            and not header_canary_needs_capacity(status, self.header_canary)
            and not mirror_needs_capacity(status, state.rollout_mirror),
            promote=state.controls.promote_requested,
        )
        if step is None:
            if status != state.status:
                await self.commit(status, [])
            return False
        side = status.active_service_status if step.side == "active" else status.pending_service_status
        cluster = clusters.get(side.ray_cluster_name)
        if cluster is None:
            return False
        config = target_capacity_config(
            state.serve_config_cache.get(side.ray_cluster_name, ""),
            rayservice.spec.serve_config_v2,
            step.goal,
        )
        if config is not None:
            await self.calls.put_serve_config(dashboard_target(cluster), config)
        side.target_capacity = step.goal
        await self.commit(status, [])
        return True

    # ---- step 13: per-cluster Services, Gateway, HTTPRoute ------------------------------------------------

    def gateway_and_route_ready(self, rayservice: RayService) -> tuple[bool, bool]:
        if self.routing.refs(rayservice).any:
            return self.routing.ready(rayservice)
        gateway = self.world.gateway_object
        route = self.world.route_object
        namespace = rayservice.metadata.namespace
        return (
            is_gateway_ready(gateway),
            is_http_route_ready(gateway_name(rayservice.metadata.name), namespace, route),
        )

    async def reconcile_objects(
        self,
        rayservice: RayService,
        active: RayCluster | None,
        pending: RayCluster | None,
        pending_ready: bool,
        active_ready: bool,
        now: datetime,
    ) -> dict[str, Any] | None:
        """The per-cluster serve Services, the Gateway and the HTTPRoute for this moment; returns the route as
        written (None when there is no active cluster yet)."""
        await self._per_cluster_services(rayservice, (active, pending))
        shared = self.routing.refs(rayservice).any
        if not shared:
            await self._gateway(rayservice)
        options = cluster_upgrade_options(rayservice.spec)
        moment = TrafficMoment(
            options,
            now,
            pending_ready,
            active_ready,
            paused=self.state.controls.paused,
            promote=self.state.controls.promote_requested,
            plan_target=self.plan_target,
        )
        route, step = desired_http_route(rayservice, active, pending, moment)
        pending_name = pending.metadata.name if pending is not None else ""
        route = with_header_canary(route, rayservice.status, pending_name, self.header_canary)
        route = with_mirror(route, rayservice.status, pending_name, self.state.rollout_mirror)
        self.traffic = step
        if shared:
            return await self.routing.reconcile(rayservice, route, self._http_route)
        if route is None:
            return None
        return await self._http_route(route)

    async def _per_cluster_services(
        self, rayservice: RayService, clusters: tuple[RayCluster | None, RayCluster | None]
    ) -> None:
        for cluster in clusters:
            if cluster is None or cluster.metadata.name in self.state.per_cluster_services:
                continue
            body = per_cluster_serve_service_to_create(rayservice, cluster, None)
            if body is not None:
                await self.calls.create_per_cluster_service(body)
                self.state.per_cluster_services.append(cluster.metadata.name)

    async def _gateway(self, rayservice: RayService) -> None:
        desired = gateway_manifest(rayservice)
        if not self.state.gateway_created:
            self.world.gateway_object = await self.calls.create_gateway(desired)
            self.state.gateway_created = True
            return
        existing = self.world.gateway_object
        if existing is not None:
            update = gateway_update(existing, desired)
            if update is not None:
                await self.calls.update_gateway_spec(desired["metadata"]["name"], update["spec"])
                existing["spec"] = update["spec"]

    async def _http_route(self, desired: dict[str, Any]) -> dict[str, Any]:
        name = str(desired["metadata"]["name"])
        existing = self.world.route_object
        if existing is None:
            existing = await self.calls.get_http_route(name)
        if existing is None:
            self.world.route_object = await self.calls.create_http_route(desired)
            return desired
        update = http_route_update(existing, desired)
        if update is not None:
            written = await self.calls.update_http_route_spec(name, update["spec"])
            self.world.route_object = written if written is not None else update
            return update
        self.world.route_object = existing
        return existing

    # ---- what to wait for ----------------------------------------------------------------------------------

    def watches(self, rayservice: RayService) -> list[Watch]:
        """The Gateway and HTTPRoute statuses, while either is not ready yet."""
        if self.routing.refs(rayservice).any:
            return self.routing.watches(rayservice)
        if not self.state.gateway_created or all(self.gateway_and_route_ready(rayservice)):
            return []
        name = rayservice.metadata.name
        view = self.world.gateway.view if self.world.gateway is not None else None
        return [Watch("gateway", f"{gateway_name(name)},{http_route_name(name)}", view_key(view))]

    def next_step_at(self) -> datetime | None:
        due = [self.traffic.next_step_at if self.traffic is not None else None, self.plan_wake_at]
        return min((at for at in due if at is not None), default=None)

    def detail_line(self, now: datetime) -> str:
        status = self.state.status
        if not _upgrading(status):
            return ""
        step = self.traffic
        return upgrade_detail_line(
            status,
            now,
            step.next_step_at if step is not None else None,
            step.waiting_for if step is not None else "",
            self.state.controls.paused,
        )
