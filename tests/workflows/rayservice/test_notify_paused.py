"""raypilot.io/notify "paused" through the real controls (issue #34), time-skipping on the fake world: an
incremental upgrade whose raypilot.io/rollout plan pauses indefinitely sends "paused" (PausedByStepPlan),
`resume` lets it go on, the `pause` control during a later timed pause sends "paused" again
(reason Paused), and `promote` finishes it with "promoted"; each notification has the id
`<workflow id>/<first run id>/<position>`, in the order they happened."""

from __future__ import annotations

from typing import Any

from temporalio.testing import WorkflowEnvironment

from models.notify import ANNOTATION_NOTIFY
from raypilot.testing.rayservice_scenarios import WORKFLOW_ID, Handle, condition_of, eventually, status_of
from tests.workflows.rayservice.test_notify import NotifyingWorld
from tests.workflows.rayservice.upgrade_support import promoted_away_from, rollout_manifest, routed, serving

PLAN = {
    "steps": [
        {"traffic": 10, "pause": "indefinite"},
        {"traffic": 30},
        {"pause": "1h"},
        {"traffic": 60},
    ]
}
NOTIFY = '{"secretRef": {"name": "hooks"}}'


def planned(version: str) -> dict[str, Any]:
    return rollout_manifest(version, PLAN, annotations={ANNOTATION_NOTIFY: NOTIFY})


def traffic_of(status: dict[str, Any]) -> int | None:
    traffic: int | None = (status.get("pendingServiceStatus") or {}).get("trafficRoutedPercent")
    return traffic


def paused_at(handle: Handle, reason: str, traffic: int) -> Any:
    """The pending cluster has `traffic` % and the UpgradeControl condition is a pause for `reason`."""

    async def probe() -> bool:
        status = await status_of(handle)
        return traffic_of(status) == traffic and condition_of(status, "UpgradeControl") == ("True", reason)

    return probe


def sent_count(world: NotifyingWorld, count: int) -> Any:
    async def probe() -> bool:
        return len(world.sent) >= count

    return probe


async def test_a_plan_pause_and_the_pause_control_each_send_paused(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, NotifyingWorld()
    async with serving(env, world, planned("v1")) as (handle, old):
        await eventually(env, routed(world))
        await handle.execute_update("apply", planned("v2"), result_type=dict)
        await eventually(env, paused_at(handle, "PausedByStepPlan", 10))
        await eventually(env, sent_count(world, 3))  # started, step 10, paused
        assert world.notified() == ["started", "step", "paused"]
        await handle.execute_update("resume", result_type=dict)

        # the timed pause after 30 % holds the upgrade for an hour: the control pauses it there
        async def in_timed_pause() -> bool:
            return traffic_of(await status_of(handle)) == 30

        await eventually(env, in_timed_pause)
        await handle.execute_update("pause", result_type=dict)
        await eventually(env, paused_at(handle, "Paused", 30))
        await eventually(env, sent_count(world, 5))  # step 30, paused
        await handle.execute_update("promote", result_type=dict)
        await eventually(env, promoted_away_from(handle, old))
        await eventually(env, lambda: _ends_with_promoted(world))
        run_id = (await handle.describe()).run_id
    events = world.notified()
    assert events[:5] == ["started", "step", "paused", "step", "paused"]
    assert events[-1] == "promoted"
    assert "paused" not in events[5:]  # resume and promote send nothing of their own
    paused = [request.notification for request in world.sent if request.notification.event == "paused"]
    assert [p.details for p in paused] == [{"reason": "PausedByStepPlan"}, {"reason": "Paused"}]
    assert paused[1].message.startswith("Upgrade paused by the pause control")
    assert [world.sent[i].notification.details.get("trafficPercent") for i in (1, 3)] == [10, 30]
    ids = [request.notification.id for request in world.sent]
    assert ids == [f"{WORKFLOW_ID}/{run_id}/{n}" for n in range(1, len(events) + 1)]


async def _ends_with_promoted(world: NotifyingWorld) -> bool:
    return world.notified()[-1:] == ["promoted"]
