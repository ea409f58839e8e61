"""One reconcile pass of a RayService, in KubeRay's order (rayservice_controller.go: Reconcile), acting
through activities and deciding only through workflows/decisions.

Order: serve-config cache pruning, dangling-cluster cleanup, suspend, the terminal initializing timeout, the
RayClusters (create the pending one, update in place), head Pod serve labels, Serve (submit the config,
readiness), the incremental upgrade's objects, the RayService-level Services, then calculateStatus. The pass
ends with what to wait for next (`PassOutcome`); it never waits on the world itself, except while objects are
being deleted for a suspend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.features import FeatureGates
    from models.meta import is_condition_true
    from models.raycluster import RayCluster
    from models.rayservice import RayService, RayServiceConditionType
    from workflows.decisions.rayservice.cluster import (
        ServiceClusters,
        goal_cluster_hash,
        is_incremental_upgrade_enabled,
        should_prepare_new_cluster,
    )
    from workflows.decisions.rayservice.conditions import RayServiceEvent, is_initializing_timeout
    from workflows.decisions.rayservice.manifest import (
        rayservice_at,
        with_gated_upgrade_strategy,
    )
    from workflows.decisions.rayservice.observed_clusters import cluster_names
    from workflows.decisions.rayservice.replica_ranks import rank_read_watches
    from workflows.decisions.rayservice.serve import (
        prune_serve_config_cache,
    )
    from workflows.decisions.rayservice.services import (
        services_target_cluster,
    )
    from workflows.decisions.rayservice.status import StatusInputs, calculate_status
    from workflows.decisions.rayservice.strategy_none import UnappliedSpec, with_unapplied_spec_condition
    from workflows.decisions.rayservice.suspend import (
        SuspendAction,
        begin_suspending,
        resume_from_suspend,
        suspend_action,
    )
    from workflows.decisions.rayservice.timeout import initializing_deadline
    from workflows.decisions.rayservice.upgrade.controls import settle_upgrade_controls
    from workflows.decisions.rayservice.upgrade.incremental import complete_incremental_rollback
    from workflows.decisions.rayservice.upgrade_status import should_finish_aborted_upgrade
    from workflows.decisions.rayservice.watches import (
        Watch,
        desired_watches,
        earliest_deadline,
    )
    from workflows.rayservice.cluster_phases import ClusterPhases
    from workflows.rayservice.drain import ClusterDrains
    from workflows.rayservice.incremental import IncrementalUpgrade
    from workflows.rayservice.part import PassContext, RayServicePart
    from workflows.rayservice.pod_restart import PodRestarts
    from workflows.rayservice.rollout import RolloutPlan
    from workflows.rayservice.serving import RayServiceServing, ServeResult

__all__ = ["PassOutcome", "RayServiceReconciler"]

UPGRADE_IN_PROGRESS = RayServiceConditionType.UPGRADE_IN_PROGRESS


@dataclass
class PassOutcome:
    again: bool = False  # something was decided that the next pass acts on at once (a new cluster name...)
    watches: list[Watch] = field(default_factory=list)
    deadline: datetime | None = None


@dataclass
class _PassSeen:
    """What one pass found and did so far, handed from phase to phase."""

    rayservice: RayService
    active: RayCluster | None
    pending: RayCluster | None
    incremental: bool
    events: list[RayServiceEvent]
    active_serve: ServeResult = field(default_factory=ServeResult)
    pending_serve: ServeResult = field(default_factory=ServeResult)
    capacity_changed: bool = False
    http_route: dict[str, Any] | None = None
    upgrading: bool = False
    services_cluster: str | None = None
    counted: dict[str, str] = field(default_factory=dict)
    endpoints: dict[str, int] = field(default_factory=dict)
    unapplied: UnappliedSpec | None = None


class RayServiceReconciler(RayServicePart):
    def __init__(self, context: PassContext) -> None:
        super().__init__(context)
        self.incremental = IncrementalUpgrade(context)
        self.serving = RayServiceServing(context)
        self.restarts = PodRestarts(context)
        self.rollout = RolloutPlan(context)
        # A due dangling cluster is first drained (drain.py).
        self.drains = ClusterDrains(context)
        self.clusters = ClusterPhases(context, drains=self.drains, rollout=self.rollout)
        # (manifest, generation, gates, the RayService parsed from them): a spec generation is parsed once.
        self._goal: tuple[dict[str, Any], int, FeatureGates, RayService] | None = None

    @property
    def gate_conditions(self) -> bool:
        return self.config.feature_gates.ray_cluster_status_conditions

    def rayservice(self) -> RayService:
        manifest, generation, gates = self.state.manifest, self.state.generation, self.config.feature_gates
        goal = self._goal
        if goal is None or goal[0] is not manifest or goal[1] != generation or goal[2] is not gates:
            parsed = rayservice_at(manifest, generation, self.state.status)
            goal = (manifest, generation, gates, with_gated_upgrade_strategy(parsed, gates))
            self._goal = goal
        # A copy per call: a RayService taken earlier in the pass keeps the status it was taken with.
        return goal[3].model_copy(update={"status": self.state.status})

    async def reconcile(self) -> PassOutcome:
        """One pass, phase by phase in KubeRay's order; each phase hands what it found to the next."""
        now = workflow.now()
        rayservice = self.rayservice()
        bg, settings = self.rollout.blue_green, self.rollout.settings(rayservice)
        bg.wake_at = None
        if await bg.judge_post_promotion(rayservice, settings):  # a failed gate switched back
            rayservice = self.rayservice()
        names_before = cluster_names(self.state.status)
        self.state.serve_config_cache = prune_serve_config_cache(self.state.serve_config_cache, *names_before)
        cleanup_due = await self.clusters.clean_up_dangling_clusters(rayservice, now)
        stopped = await self._suspend_or_resume(rayservice, now)
        if stopped is not None:
            return stopped
        if is_initializing_timeout(self.state.status.conditions):
            # Terminal: only the clusters left over are deleted, each after the deletion delay.
            return PassOutcome(watches=self.drains.watches(), deadline=cleanup_due)
        seen = await self._reconcile_clusters_and_serve(await self._finish_aborted_upgrade(now), now)
        await self._step_incremental_upgrade(seen, now)
        await self._reconcile_services(seen)
        await self._commit_status(seen, now)
        self.clusters.note_dropped_aborted_cluster(names_before)
        if not seen.incremental:
            bg.note_promotion(settings, names_before, cluster_names(self.state.status)[0])
        outcome = self._next_wait(seen, names_before, earliest_deadline(cleanup_due, bg.wake_at))
        # The pending cluster of an upgrade found ready (a NewCluster one is promoted in the same pass).
        ready = names_before[1] if seen.pending_serve.ready and all(names_before) else ""
        pending_apps = seen.pending_serve.applications
        acted, due = await self.rollout.after_pass(self.rayservice(), ready, pending_apps, now)
        return PassOutcome(outcome.again or acted, outcome.watches, earliest_deadline(outcome.deadline, due))

    async def _suspend_or_resume(self, rayservice: RayService, now: datetime) -> PassOutcome | None:
        """spec.suspend: begin, delete the owned objects or stay suspended (the pass ends: an outcome), or
        resume (the pass goes on: None)."""
        state = self.state
        action = suspend_action(rayservice.spec.suspend, state.status)
        if action == SuspendAction.BEGIN:
            await self.commit(begin_suspending(state.status, state.generation, now), [])
            return PassOutcome(again=True)
        if action == SuspendAction.DELETE_OWNED:
            await self.clusters.suspend(now)
            return PassOutcome(again=True)
        if action == SuspendAction.STAY_SUSPENDED:
            return PassOutcome()
        if action == SuspendAction.RESUME:
            await self.commit(resume_from_suspend(state.status, state.generation, now), [])
        return None

    async def _finish_aborted_upgrade(self, now: datetime) -> RayService:
        """Completes an aborted incremental upgrade whose rollback finished; returns the RayService now."""
        rayservice = self.rayservice()
        incremental = is_incremental_upgrade_enabled(rayservice.spec, self.config)
        if should_finish_aborted_upgrade(self.state.status, incremental):
            await self.commit(complete_incremental_rollback(self.state.status, now), [])
            rayservice = self.rayservice()
        return rayservice

    async def _reconcile_clusters_and_serve(self, rayservice: RayService, now: datetime) -> _PassSeen:
        """The RayClusters, an incremental rollback, the head Pods' serve labels, then Serve on the pending
        cluster and (when it is to serve, or an incremental upgrade runs) on the active one."""
        active, pending, events = await self.clusters.reconcile_clusters(rayservice)
        incremental = is_incremental_upgrade_enabled(rayservice.spec, self.config)
        if incremental:
            events += await self.incremental.reconcile_rollback(rayservice, active, pending, now)
            rayservice = self.rayservice()
        # With strategy None the active cluster is left alone, as KubeRay does, and the workflow says so
        # (strategy_none.py), unless raypilot.io/in-place-restart asks for a roll of its Pods.
        active, unapplied, started = await self.restarts.apply_spec(rayservice, active, pending)
        events += started
        await self.serving.update_head_serve_labels(rayservice, (active, pending))
        seen = _PassSeen(rayservice, active, pending, incremental, events)
        seen.unapplied = unapplied
        if pending is not None:
            seen.pending_serve = await self.serving.reconcile_serve(rayservice, pending)
        if active is not None and (
            (pending is None and not self._would_prepare_new_cluster(rayservice, active))
            or (pending is not None and incremental)
        ):
            seen.active_serve = await self.serving.reconcile_serve(rayservice, active)
        seen.events += await self.restarts.step(rayservice, active)
        return seen

    async def _step_incremental_upgrade(self, seen: _PassSeen, now: datetime) -> None:
        """The next capacity step, then the Gateway, HTTPRoute and per-cluster Services."""
        if not seen.incremental:
            return
        upgrade = self.incremental
        clusters = {
            cluster.metadata.name: cluster for cluster in (seen.active, seen.pending) if cluster is not None
        }
        ready = (seen.pending_serve.ready, seen.active_serve.ready)
        upgrade.header_canary = self.rollout.header_canary(seen.rayservice)
        seen.capacity_changed = await upgrade.step_capacity(seen.rayservice, dict(clusters), *ready)
        upgrade.plan_target, upgrade.plan_wake_at = await self.rollout.step(self.rayservice(), now)
        seen.rayservice = self.rayservice()
        seen.http_route = await upgrade.reconcile_objects(
            seen.rayservice, seen.active, seen.pending, *ready, now
        )

    async def _reconcile_services(self, seen: _PassSeen) -> None:
        """The RayService-level Services switched to the cluster that serves, then their ready endpoints."""
        rayservice, incremental = seen.rayservice, seen.incremental
        seen.upgrading = incremental and is_condition_true(self.state.status.conditions, UPGRADE_IN_PROGRESS)
        target = services_target_cluster(seen.active_serve.ready, seen.pending_serve.ready, seen.upgrading)
        if target == "pending" and self.state.controls.paused and not incremental:
            target = None  # a paused blue-green upgrade holds the switch
        gates = self.rollout.blue_green
        if (
            target == "pending"
            and not incremental
            and await gates.holds_switch(rayservice, self.rollout.settings(rayservice))
        ):
            target = None  # a blue-green gate before the switch
            seen.rayservice = self.rayservice()  # what the gate committed (a rollback, a pause)
        target_cluster = {"active": seen.active, "pending": seen.pending, None: None}[target]
        seen.services_cluster = await self.serving.reconcile_services(
            rayservice, target_cluster, incremental, seen.events
        )
        seen.counted = self.serving.existing_serve_services(
            rayservice, seen.active, seen.pending, incremental
        )
        seen.endpoints = await self.world.count_endpoints(seen.counted) if seen.counted else {}

    async def _commit_status(self, seen: _PassSeen, now: datetime) -> None:
        """calculateStatus, the upgrade controls settled against it, then the status and events committed."""
        state = self.state
        outcome = calculate_status(
            StatusInputs(
                rayservice=seen.rayservice,
                config=self.config,
                now=now,
                rand=workflow.random(),
                active=seen.active,
                pending=seen.pending,
                active_applications=seen.active_serve.applications,
                pending_applications=seen.pending_serve.applications,
                services_cluster=seen.services_cluster,
                serve_endpoints=seen.endpoints,
                http_route=seen.http_route,
                suppressed_goal_hash=state.controls.aborted_goal_hash,
            )
        )
        state.controls, status = settle_upgrade_controls(
            state.controls, outcome.status, goal_cluster_hash(seen.rayservice.spec)
        )
        events = seen.events + outcome.events
        status, not_applied = with_unapplied_spec_condition(status, seen.unapplied, now)
        events += not_applied
        status = self.restarts.with_condition(status, now)
        if seen.incremental and self.incremental.routing.refs(seen.rayservice).any:
            status, not_routed = self.incremental.routing.with_condition(status, now)
            events += not_routed
        detail = self.incremental.detail_line(now) if seen.incremental else ""
        await self.commit(status, events, detail)

    def _next_wait(
        self, seen: _PassSeen, names_before: tuple[str, str], cleanup_due: datetime | None
    ) -> PassOutcome:
        """What the loop waits for next (the watches and the earliest deadline), or another pass at once."""
        state, rayservice, upgrade = self.state, seen.rayservice, self.incremental
        # New cluster names (a pending cluster chosen, a promotion, names cleared by the initializing
        # timeout) are acted on by the next pass: create the cluster, schedule the dangling one's deletion.
        # A capacity step, or traffic that just caught up with the capacity, may allow the next step now.
        traffic_moved = seen.incremental and upgrade.traffic is not None and upgrade.traffic.moved
        again = cluster_names(state.status) != names_before or seen.capacity_changed or traffic_moved
        again = again or self.restarts.again  # a roll moved on, or read Serve anew
        serving = seen.active_serve.ready or seen.pending_serve.ready
        watches = desired_watches(
            {name: self.world.cluster(name, rayservice) for name in cluster_names(state.status) if name},
            {name: observation.view for name, observation in self.world.serve.items()},
            list(seen.counted),
            self.world.endpoints,
            seen.services_cluster is not None and serving,
            self.gate_conditions,
        )
        current = cluster_names(state.status)
        watches += rank_read_watches(
            {name: self.world.serve[name].details for name in current if name in self.world.serve},
            {name: read[0] for name, read in self.world.ranks.items()},
        )
        if seen.incremental:
            watches += upgrade.watches(rayservice)
        watches += self.restarts.watches() + self.drains.watches()
        deadline = earliest_deadline(
            cleanup_due,
            initializing_deadline(state.status.conditions, rayservice.metadata.annotations),
            upgrade.next_step_at() if seen.upgrading else None,
            self.restarts.next_check(workflow.now()),
        )
        return PassOutcome(again=again, watches=watches, deadline=deadline)

    def _would_prepare_new_cluster(self, rayservice: RayService, active: RayCluster) -> bool:
        return should_prepare_new_cluster(
            ServiceClusters(
                rayservice=rayservice,
                active=active,
                pending=None,
                pending_serving=False,
                config=self.config,
                suppressed_goal_hash=self.state.controls.aborted_goal_hash,
            )
        )
