"""Per-step deadlines and the head Pod crash loop of `raypilot.io/rollout` in a RayService pass (issue #18).
Decisions in decisions/rayservice/upgrade/step_deadline.py and crash_loop.py."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.meta import is_condition_true
    from models.rayservice import RayService, RayServiceConditionType, RayServiceStatuses
    from models.rollout import RolloutSettings
    from workflows.decisions.rayservice.cluster import goal_cluster_hash
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.rayservice.upgrade.crash_loop import head_crash_loop, head_crash_loop_upgrade
    from workflows.decisions.rayservice.upgrade.step_deadline import (
        step_clock,
        step_deadline_exceeded,
        step_deadline_verdict,
    )
    from workflows.decisions.rayservice.upgrade.step_plan import StepAction
    from workflows.decisions.rayservice.watches import earliest_deadline
    from workflows.rayservice.part import RayServicePart

__all__ = ["RolloutHealth"]


class RolloutHealth(RayServicePart):
    def step_deadline(
        self,
        rayservice: RayService,
        settings: RolloutSettings,
        action: StepAction,
        status: RayServiceStatuses,
        events: list[RayServiceEvent],
        now: datetime,
    ) -> tuple[StepAction, RayServiceStatuses, bool]:
        """The step's own deadline: (the action with the deadline as one more wake-up, the status, whether
        the upgrade was rolled back). A Degraded step adds its Event to `events`."""
        state = self.state
        index = action.progress.index
        if index >= len(settings.steps):
            return action, status, False
        clock = step_clock(state.step_clock, action.progress.cluster, index, now)
        state.step_clock = clock
        step = settings.steps[index]
        verdict = step_deadline_verdict(step, clock, action.waiting_for, state.step_deadline_settled, now)
        if verdict.verdict == "wait":
            return (
                dataclasses.replace(action, wake_at=earliest_deadline(action.wake_at, verdict.due_at)),
                status,
                False,
            )
        if verdict.verdict != "exceeded" or step.progress_deadline_seconds is None:
            return action, status, False
        state.step_deadline_settled = clock.key
        controls, status, event = step_deadline_exceeded(
            status,
            state.controls,
            settings.on_progress_deadline,
            clock,
            step.progress_deadline_seconds,
            action.waiting_for,
            goal_cluster_hash(rayservice.spec),
            now,
        )
        events.append(event)
        rolled_back = controls != state.controls
        state.controls = controls
        return action, status, rolled_back

    async def check_head_crash_loop(self, rayservice: RayService, settings: RolloutSettings | None) -> bool:
        """onUnhealthy for a crash-looping head Pod of the pending cluster, once per cluster. True when the
        upgrade was rolled back."""
        state = self.state
        status = state.status
        pending = status.pending_service_status.ray_cluster_name
        if (
            settings is None
            or not pending
            or pending == state.unhealthy_settled
            or not is_condition_true(status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS)
            or is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
        ):
            return False
        observation = self.world.serve.get(pending)
        seen = head_crash_loop(observation.head_pod if observation is not None else None)
        if not seen:
            return False
        state.unhealthy_settled = pending
        controls, status, event = head_crash_loop_upgrade(
            status,
            state.controls,
            settings.on_unhealthy,
            seen,
            goal_cluster_hash(rayservice.spec),
            workflow.now(),
        )
        rolled_back = controls != state.controls
        state.controls = controls
        await self.commit(status, [event])
        return rolled_back
