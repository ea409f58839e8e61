"""raypilot.io/rollout in a RayService pass (issue #18): the step plan of an incremental upgrade.

Asked once per pass, after the capacity step and before the HTTPRoute is written: the plan's decision
(decisions/upgrade/step_plan.py) gives the traffic ceiling for this moment (the traffic decision takes it
through `TrafficMoment.plan_target`), the end of a timed pause (one more deadline for the workflow's timer),
and whether an indefinite pause sets the pause control now. Runs started before patch
`rayservice-rollout-plan` never read the annotation (`enabled` False), so they replay unchanged.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.meta import is_condition_true
    from models.rayservice import RayService, RayServiceConditionType
    from models.rollout import RolloutSettings, rollout_settings
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.upgrade.step_plan import (
        StepAction,
        StepProgress,
        next_step_action,
        paused_by_plan,
        with_step_condition,
    )
    from workflows.rayservice.part import RayServicePart

__all__ = ["RolloutPlan"]


class RolloutPlan(RayServicePart):
    enabled: bool = False  # patch rayservice-rollout-plan

    def settings(self, rayservice: RayService) -> RolloutSettings | None:
        if not self.enabled:
            return None
        try:
            return rollout_settings(rayservice.metadata.annotations)
        except ValueError:
            return None  # never: a manifest is checked before it is accepted

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
            action = next_step_action(
                settings.steps,
                state.rollout_progress or StepProgress(),
                pending.ray_cluster_name,
                weight,
                state.controls.paused,
                now,
            )
            state.rollout_progress = action.progress
            if action.pause_now:
                number = action.progress.index + 1
                state.controls, status = paused_by_plan(state.controls, rayservice, number, now)
                message = f"Step {number} of raypilot.io/rollout pauses the upgrade until resume or promote."
                events.append(RayServiceEvent("Normal", "RolloutPaused", message))
        steps = len(settings.steps) if settings is not None else 0
        status = with_step_condition(status, action, steps, now)
        if status != state.status or events:
            await self.commit(status, events)
        if action is None:
            return None, None
        return action.traffic_target, action.wake_at
