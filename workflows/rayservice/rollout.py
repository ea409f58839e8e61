"""raypilot.io/rollout in a RayService pass (issue #18): the step plan of an incremental upgrade, and the
progress deadline of any upgrade (asked at the end of a pass, once the pending cluster's readiness is known).

Asked once per pass, after the capacity step and before the HTTPRoute is written: the plan's decision
(decisions/rayservice/upgrade/step_plan.py) gives the traffic ceiling for this moment (the traffic decision
takes it through `TrafficMoment.plan_target`), the end of a timed pause (one more deadline for the
workflow's timer), and whether an indefinite pause sets the pause control now.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.meta import is_condition_true
    from models.rayservice import AppStatus, RayService, RayServiceConditionType, RayServiceStatuses
    from models.rollout import HeaderCanary, RolloutSettings, rollout_settings
    from workflows.decisions.rayservice.cluster import goal_cluster_hash
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.rayservice.upgrade.analysis import (
        analysis_failed,
        analysis_result,
        with_analysis_condition,
    )
    from workflows.decisions.rayservice.upgrade.mirror import mirror_percent, with_mirror_condition
    from workflows.decisions.rayservice.upgrade.progress_deadline import (
        deadline_exceeded,
        new_cluster_ready_in_time,
        progress_deadline_verdict,
    )
    from workflows.decisions.rayservice.upgrade.step_plan import (
        StepAction,
        StepProgress,
        next_step_action,
        paused_by_plan,
        with_step_condition,
    )
    from workflows.decisions.rayservice.upgrade.unhealthy import unhealthy_applications, unhealthy_upgrade
    from workflows.rayservice.blue_green import BlueGreenGates
    from workflows.rayservice.gates import AnalysisGates
    from workflows.rayservice.part import RayServicePart
    from workflows.rayservice.rollout_health import RolloutHealth

__all__ = ["RolloutPlan"]


def step_point(index: int) -> str:
    """Where a plan's analysis gate runs, for its kept run: "step 3" (1-based, as the RolloutStep
    condition counts)."""
    return f"step {index + 1}"


class RolloutPlan(RayServicePart):
    @functools.cached_property
    def gates(self) -> AnalysisGates:
        """The measured gates (http, prometheus) share this part's state, world and calls."""
        return AnalysisGates(self.context)

    @functools.cached_property
    def health(self) -> RolloutHealth:
        """Per-step deadlines and the head Pod crash loop."""
        return RolloutHealth(self.context)

    @functools.cached_property
    def blue_green(self) -> BlueGreenGates:
        """The gates of a NewCluster upgrade, before and after the Service switch."""
        return BlueGreenGates(self.gates)

    def settings(self, rayservice: RayService) -> RolloutSettings | None:
        try:
            return rollout_settings(rayservice.metadata.annotations)
        except ValueError:
            return None  # never: a manifest is checked before it is accepted

    def header_canary(self, rayservice: RayService) -> HeaderCanary | None:
        settings = self.settings(rayservice)
        return settings.header_canary if settings is not None else None

    async def step(self, rayservice: RayService, now: datetime) -> tuple[int | None, datetime | None]:
        """The plan's traffic ceiling and the end of a timed pause for this pass, (None, None) without a plan
        being walked (KubeRay's steps then)."""
        state = self.state
        status = state.status
        settings = self.settings(rayservice)
        action: StepAction | None = None
        events: list[RayServiceEvent] = []
        pending = status.pending_service_status
        walking = (
            settings is not None
            and bool(settings.steps)
            and is_condition_true(status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS)
            and not is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
            and bool(pending.ray_cluster_name)
            and not state.controls.promote_requested
        )
        if walking and settings is not None:
            weight = 0 if pending.traffic_routed_percent is None else pending.traffic_routed_percent
            results = {a.name: analysis_result(a, pending.application_statuses) for a in settings.analyses}
            cluster, progress = pending.ray_cluster_name, state.rollout_progress or StepProgress()
            point = step_point(progress.index if progress.cluster == cluster else 0)
            results.update(self.gates.results(settings, cluster, point))
            action = next_step_action(
                settings.steps, progress, cluster, weight, state.controls.paused, now, results
            )
            if action.waiting_for == "analysis":
                point = step_point(action.progress.index)
                if await self.gates.run_if_due(rayservice, settings, action.analysis, cluster, point):
                    results.update(self.gates.results(settings, cluster, point))
                    action = next_step_action(
                        settings.steps, progress, cluster, weight, state.controls.paused, now, results
                    )
                if action.waiting_for == "analysis":
                    action = dataclasses.replace(action, wake_at=self.gates.retry_at(cluster, point))
            state.rollout_progress = action.progress
            if action.analysis:
                status = with_analysis_condition(status, results[action.analysis], now)
            if action.waiting_for == "failed":
                goal = goal_cluster_hash(rayservice.spec)
                state.controls, status, failed = analysis_failed(status, results[action.analysis], goal, now)
                status = self._mirror(with_step_condition(status, None, 0, now), 0, events)
                await self.commit(status, [failed, *events])
                return None, None
            action, status, rolled_back = self.health.step_deadline(
                rayservice, settings, action, status, events, now
            )
            if rolled_back:
                await self.commit(self._mirror(with_step_condition(status, None, 0, now), 0, events), events)
                return None, None
            if action.pause_now:
                number = action.progress.index + 1
                state.controls, status = paused_by_plan(state.controls, rayservice, number, now)
                message = f"Step {number} of raypilot.io/rollout pauses the upgrade until resume or promote."
                events.append(RayServiceEvent("Normal", "RolloutPaused", message))
        steps = len(settings.steps) if settings is not None else 0
        walked = action is not None and action.waiting_for != "complete"
        index = action.progress.index if action is not None and walked else None
        mirror = mirror_percent(settings.steps, index) if settings is not None else 0
        status = self._mirror(with_step_condition(status, action, steps, now, mirror), mirror, events)
        if status != state.status or events:
            await self.commit(status, events)
        if action is None:
            return None, None
        return action.traffic_target, action.wake_at

    def _mirror(
        self, status: RayServiceStatuses, percent: int, events: list[RayServiceEvent]
    ) -> RayServiceStatuses:
        """steps[].mirror: the mirror in effect from now on (the HTTPRoute takes it from the state), its
        condition and Event when it changed (decisions/rayservice/upgrade/mirror.py)."""
        state = self.state
        cluster = state.status.pending_service_status.ray_cluster_name
        status, changed = with_mirror_condition(
            status, state.rollout_mirror, percent, cluster, workflow.now()
        )
        state.rollout_mirror = percent
        events.extend(changed)
        return status

    async def check_progress_deadline(
        self, rayservice: RayService, ready_cluster: str, now: datetime
    ) -> tuple[bool, datetime | None]:
        """(acted, when to look again): past the deadline the upgrade is aborted or marked degraded (acted:
        the next pass follows at once); before it, its instant is one more deadline for the workflow's
        timer."""
        settings = self.settings(rayservice)
        state = self.state
        if settings is None or settings.progress_deadline_seconds is None:
            return False, None
        seconds = settings.progress_deadline_seconds
        verdict = progress_deadline_verdict(
            state.status, seconds, ready_cluster, state.progress_deadline_settled, now
        )
        pending = state.status.pending_service_status.ray_cluster_name
        if verdict.verdict == "wait":
            return False, verdict.due_at
        if verdict.verdict == "ready":
            state.progress_deadline_settled = ready_cluster
            await self.commit(new_cluster_ready_in_time(state.status, ready_cluster, now), [])
            return False, None
        if verdict.verdict == "exceeded":
            state.progress_deadline_settled = pending
            controls, status, event = deadline_exceeded(
                state.status,
                state.controls,
                settings.on_progress_deadline,
                seconds,
                goal_cluster_hash(rayservice.spec),
                now,
            )
            state.controls = controls
            await self.commit(status, [event])
            return True, None
        return False, None

    async def after_pass(
        self,
        rayservice: RayService,
        ready_cluster: str,
        pending_applications: dict[str, AppStatus] | None,
        now: datetime,
    ) -> tuple[bool, datetime | None]:
        """The checks that need the pass' observations: an unhealthy new cluster, then the progress
        deadline. (acted: the next pass follows at once, when to look again)."""
        if await self.check_health(rayservice, pending_applications, now):
            return True, None
        if await self.health.check_head_crash_loop(rayservice, self.settings(rayservice)):
            return True, None
        return await self.check_progress_deadline(rayservice, ready_cluster, now)

    async def check_health(
        self, rayservice: RayService, pending_applications: dict[str, AppStatus] | None, now: datetime
    ) -> bool:
        """onUnhealthy: a pending cluster with a Serve application DEPLOY_FAILED or UNHEALTHY is rolled back
        (Abort) or said so (Wait), once per cluster. True when the upgrade was rolled back."""
        settings = self.settings(rayservice)
        state = self.state
        if settings is None:
            return False
        unhealthy = unhealthy_applications(state.status, pending_applications, state.unhealthy_settled)
        if not unhealthy:
            return False
        state.unhealthy_settled = state.status.pending_service_status.ray_cluster_name
        controls, status, event = unhealthy_upgrade(
            state.status,
            state.controls,
            settings.on_unhealthy,
            unhealthy,
            goal_cluster_hash(rayservice.spec),
            now,
        )
        rolled_back = controls != state.controls
        state.controls = controls
        await self.commit(status, [event])
        return rolled_back
