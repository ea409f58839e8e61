"""The gates of a NewCluster (blue-green) upgrade in a RayService pass (`raypilot.io/rollout`, issue #18):
before the Service switch (`prePromotionAnalysis`, `autoPromotionEnabled: false`) and after it
(`postPromotionAnalysis`, holding the old cluster's deletion). Decisions in
decisions/rayservice/upgrade/blue_green.py; measured gates run through `AnalysisGates`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.rayservice import AppStatus, RayService
    from models.rollout import RolloutSettings
    from workflows.decisions.rayservice.cleanup import CleanupPlan
    from workflows.decisions.rayservice.cluster import goal_cluster_hash
    from workflows.decisions.rayservice.upgrade.analysis import (
        AnalysisResult,
        analysis_failed,
        analysis_result,
        with_analysis_condition,
    )
    from workflows.decisions.rayservice.upgrade.blue_green import (
        PostPromotion,
        awaiting_promotion,
        post_promotion_step,
        pre_promotion_step,
        switched_back,
    )
    from workflows.decisions.rayservice.upgrade.gates import INCONCLUSIVE_RETRY_SECONDS
    from workflows.decisions.rayservice.upgrade.incremental import complete_incremental_rollback
    from workflows.rayservice.gates import AnalysisGates

__all__ = ["BlueGreenGates"]

PRE: str = "prePromotion"
POST: str = "postPromotion"


class BlueGreenGates:
    def __init__(self, gates: AnalysisGates) -> None:
        self.gates = gates
        self.wake_at: datetime | None = None  # an undecided gate is asked again then

    async def _judge(
        self,
        rayservice: RayService,
        settings: RolloutSettings,
        name: str,
        cluster: str,
        point: str,
        applications: dict[str, AppStatus],
    ) -> AnalysisResult:
        analysis = next(a for a in settings.analyses if a.name == name)
        await self.gates.run_if_due(rayservice, settings, name, cluster, point)
        measured = self.gates.results(settings, cluster, point)
        result = measured.get(name) or analysis_result(analysis, applications)
        if result.verdict == "pending":
            due = self.gates.retry_at(cluster, point) or workflow.now() + timedelta(
                seconds=INCONCLUSIVE_RETRY_SECONDS
            )
            self.wake_at = due if self.wake_at is None else min(self.wake_at, due)
        return result

    async def holds_switch(self, rayservice: RayService, settings: RolloutSettings | None) -> bool:
        """Whether the Service switch to the ready pending cluster waits this pass (a pending or failed
        pre-promotion gate, or a manual promotion not given yet)."""
        state = self.gates.state
        if settings is None or not state.status.active_service_status.ray_cluster_name:
            return False  # the first cluster of a RayService is not an upgrade
        pending = state.status.pending_service_status
        cluster, now = pending.ray_cluster_name, workflow.now()
        result: AnalysisResult | None = None
        if settings.pre_promotion_analysis is not None and cluster:
            name = settings.pre_promotion_analysis
            result = await self._judge(rayservice, settings, name, cluster, PRE, pending.application_statuses)
            status = with_analysis_condition(state.status, result, now)
            if status != state.status:
                await self.gates.commit(status, [])
        step = pre_promotion_step(
            cluster,
            result,
            not settings.auto_promotion_enabled,
            state.promotion_awaited,
            state.controls.promote_requested,
        )
        if step == "fail" and result is not None:
            goal = goal_cluster_hash(rayservice.spec)
            state.controls, status, event = analysis_failed(state.status, result, goal, now)
            # No traffic went to the new cluster: the rollback is complete at once (the pending cluster
            # dangles and is deleted after the deletion delay).
            await self.gates.commit(complete_incremental_rollback(status, now), [event])
        elif step == "await_promote":
            state.promotion_awaited = cluster
            state.controls, status, event = awaiting_promotion(state.controls, state.status, cluster, now)
            await self.gates.commit(status, [event])
        return step != "switch"

    def note_promotion(self, settings: RolloutSettings | None, before: tuple[str, str], active: str) -> None:
        """A blue-green switch this pass (the pending cluster became the active one): its post-promotion
        gate is to be judged before the old cluster goes."""
        if settings is None or settings.post_promotion_analysis is None:
            return
        old, new = before
        if old and new and active == new:
            self.gates.state.post_promotion = PostPromotion(new_cluster=new, old_cluster=old)

    async def judge_post_promotion(self, rayservice: RayService, settings: RolloutSettings | None) -> bool:
        """The post-promotion gate, asked at the start of a pass. True when it switched back (the pass then
        goes on with the old cluster active)."""
        state = self.gates.state
        post = state.post_promotion
        if post is None:
            return False
        active = state.status.active_service_status
        if (
            settings is None
            or settings.post_promotion_analysis is None
            or post.new_cluster != active.ray_cluster_name
        ):
            state.post_promotion = None
            return False
        name, now = settings.post_promotion_analysis, workflow.now()
        result = await self._judge(
            rayservice, settings, name, post.new_cluster, POST, active.application_statuses
        )
        step = post_promotion_step(post, active.ray_cluster_name, result)
        if step == "hold":
            status = with_analysis_condition(state.status, result, now)
            if status != state.status:
                await self.gates.commit(status, [])
            return False
        state.post_promotion = None
        status = with_analysis_condition(state.status, result, now)
        if step != "switch_back":
            await self.gates.commit(status, [])
            return False
        goal = goal_cluster_hash(rayservice.spec)
        state.controls, status, event = switched_back(status, post, result, goal, now)
        state.deletion_schedule.pop(post.old_cluster, None)
        state.aborted_cluster = post.new_cluster  # abortScaleDownDelaySeconds holds it (cluster_phases.py)
        await self.gates.commit(status, [event])
        return True

    def hold_old_cluster(self, plan: CleanupPlan) -> CleanupPlan:
        """The cleanup plan without the old cluster of a promotion whose post-promotion gate is pending."""
        post = self.gates.state.post_promotion
        if post is None or post.old_cluster not in plan.delete_now:
            return plan
        keep = [name for name in plan.delete_now if name != post.old_cluster]
        due = self.wake_at or workflow.now() + timedelta(seconds=INCONCLUSIVE_RETRY_SECONDS)
        schedule = {**plan.schedule, post.old_cluster: due}
        return CleanupPlan(schedule, tuple(keep), plan.has_clusters_to_clean, min(schedule.values()))
