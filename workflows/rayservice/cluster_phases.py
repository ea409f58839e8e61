"""The phases of a RayService pass that act on its RayClusters themselves: delete the dangling ones once due
(drained first, held by a blue-green gate), delete every owned object for a suspend, and create the pending
cluster or update a cluster in place (the reconciler, reconcile.py, runs them in KubeRay's order). A dangling
cluster is drained first (`ClusterDrains`) and may be held by a blue-green gate (`RolloutPlan`): the parts the
reconciler hands in.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.raycluster import RayCluster
    from models.rayservice import RayService
    from workflows.decisions.rayservice.cleanup import (
        OwnedClusters,
        cluster_deletion_delay,
        plan_dangling_cluster_cleanup,
    )
    from workflows.decisions.rayservice.cluster import (
        in_place_update_request,
        rayservice_cluster_manifest,
        should_update_cluster,
    )
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.rayservice.observed_clusters import cluster_names
    from workflows.decisions.rayservice.suspend import complete_suspend, suspending_in_progress
    from workflows.decisions.rayservice.upgrade.abort_delay import (
        dropped_aborted_cluster,
        keep_aborted_cluster,
        still_kept,
        with_kept_condition,
    )
    from workflows.rayservice.drain import ClusterDrains
    from workflows.rayservice.part import PassContext, RayServicePart
    from workflows.rayservice.rollout import RolloutPlan


class ClusterPhases(RayServicePart):
    def __init__(self, context: PassContext, *, drains: ClusterDrains, rollout: RolloutPlan) -> None:
        super().__init__(context)
        self.drains = drains
        self.rollout = rollout

    # ---- dangling clusters ---------------------------------------------------------------------------------

    async def clean_up_dangling_clusters(self, rayservice: RayService, now: datetime) -> datetime | None:
        state = self.state
        active_name, pending_name = cluster_names(state.status)
        began = self._hold_aborted_cluster(rayservice, (active_name, pending_name), now)
        plan = plan_dangling_cluster_cleanup(
            OwnedClusters(
                existing=state.owned_clusters,
                active=active_name,
                pending=pending_name,
                schedule=state.deletion_schedule,
                delay=cluster_deletion_delay(rayservice.spec),
                now=now,
            )
        )
        plan = await self.drains.hold_undrained(rayservice, plan, now)
        plan = self.rollout.blue_green.hold_old_cluster(plan)
        state.deletion_schedule = plan.schedule
        if plan.delete_now:
            await asyncio.gather(
                *(self.calls.delete_cluster(name, self._uid(name)) for name in plan.delete_now)
            )
            state.owned_clusters = [name for name in state.owned_clusters if name not in plan.delete_now]
            for name in plan.delete_now:
                state.serve_details.pop(name, None)
            self.world.forget(plan.delete_now)
        if state.kept_for_debugging or began:
            state.kept_for_debugging = still_kept(state.kept_for_debugging, plan.schedule, now)
            status, events = with_kept_condition(state.status, state.kept_for_debugging, began, now)
            if status != state.status or events:
                await self.commit(status, events)
        return plan.next_due

    def note_dropped_aborted_cluster(self, before: tuple[str, str]) -> None:
        """At the end of a pass: the pending cluster it dropped for a rollback raypilot ran is the aborted
        one, held by the next pass' cleanup (abortScaleDownDelaySeconds)."""
        dropped = dropped_aborted_cluster(before, cluster_names(self.state.status), self.state.controls)
        if dropped:
            self.state.aborted_cluster = dropped

    def _hold_aborted_cluster(self, rayservice: RayService, current: tuple[str, str], now: datetime) -> str:
        """raypilot.io/rollout abortScaleDownDelaySeconds: the aborted cluster's deletion scheduled at the
        end of its hold once it is left over (decisions/rayservice/upgrade/abort_delay.py); the cluster whose
        hold began now, or ""."""
        state = self.state
        if not state.aborted_cluster:
            return ""
        settings = self.rollout.settings(rayservice)
        hold = keep_aborted_cluster(
            state.deletion_schedule,
            state.kept_for_debugging,
            state.aborted_cluster,
            state.owned_clusters,
            current,
            settings.abort_scale_down_delay_seconds if settings is not None else None,
            now,
        )
        state.deletion_schedule, state.kept_for_debugging = hold.schedule, hold.kept
        state.aborted_cluster = hold.aborted
        return hold.began

    def _uid(self, name: str) -> str | None:
        uid = ((self.world.clusters.get(name) or {}).get("metadata") or {}).get("uid")
        return str(uid) if uid else None

    # ---- suspend -------------------------------------------------------------------------------------------

    async def suspend(self, now: datetime) -> None:
        """Delete every owned object; Suspended once they are all gone (Suspending is already recorded, so
        this completes even if spec.suspend flips back meanwhile)."""
        state = self.state
        await self.calls.delete_owned()
        remaining = await self.calls.list_owned()
        if remaining:
            await self.commit(suspending_in_progress(state.status, now), [])
            clusters = [ref["name"] for ref in remaining if ref.get("kind") == "RayCluster"]
            await self.world.wait_clusters_gone(clusters)
            if len(clusters) < len(remaining):
                await self.calls.delete_owned()
        state.owned_clusters = []
        state.deletion_schedule = {}
        state.kept_for_debugging, state.aborted_cluster = {}, ""
        state.services_cluster = ""
        state.per_cluster_services = []
        state.gateway_created = False
        state.serve_config_cache = {}
        state.serve_details = {}
        self.world.forget_everything()
        await self.commit(complete_suspend(state.status, workflow.now()), [])

    # ---- RayClusters ---------------------------------------------------------------------------------------

    async def reconcile_clusters(
        self, rayservice: RayService
    ) -> tuple[RayCluster | None, RayCluster | None, list[RayServiceEvent]]:
        state, world = self.state, self.world
        active_name, pending_name = cluster_names(state.status)
        await world.refresh_clusters((active_name, pending_name), state.owned_clusters)
        if pending_name and world.clusters.get(pending_name) is None:
            manifest = rayservice_cluster_manifest(rayservice, pending_name, self.config)
            world.clusters[pending_name] = await self.calls.create_cluster(manifest)
            if pending_name not in state.owned_clusters:
                state.owned_clusters.append(pending_name)
        events: list[RayServiceEvent] = []
        active = world.cluster(active_name, rayservice)
        pending = world.cluster(pending_name, rayservice)
        if should_update_cluster(rayservice, active, is_active=True):
            active = await self._update_in_place(rayservice, active_name)
        if should_update_cluster(rayservice, pending, is_active=False):
            pending = await self._update_in_place(rayservice, pending_name)
        return active, pending, events

    async def _update_in_place(self, rayservice: RayService, name: str) -> RayCluster | None:
        current = self.world.clusters.get(name)
        if current is None:
            return None
        goal = rayservice_cluster_manifest(rayservice, name, self.config)
        updated = await self.calls.update_cluster(name, in_place_update_request(current, goal))
        self.world.clusters[name] = updated
        return self.world.cluster(name, rayservice)
