"""Workflow metrics count once: a RayJob run on a worker that replays the whole history on every workflow
task (no cache) records each state once, and replaying its finished history records nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.runtime import BufferedMetricUpdate, MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from raypilot.converter import raypilot_data_converter
from raypilot.search_attributes import ensure_search_attributes
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeWorld
from raypilot.testing.rayservice_scenarios import eventually, incremental_manifest
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.time_skipping import start_time_skipping_env
from raypilot.testing.worker import running_worker
from tests.workflows.rayservice.upgrade_support import apply, serving, upgrade_finished
from wire import metrics as m
from workflows.registry import WORKFLOWS


@pytest.fixture
async def buffered() -> AsyncIterator[tuple[WorkflowEnvironment, MetricBuffer, Runtime]]:
    buffer = MetricBuffer(100_000)
    runtime = Runtime(telemetry=TelemetryConfig(metrics=buffer))
    env = await start_time_skipping_env(runtime=runtime)
    try:
        await ensure_search_attributes(env.client, env.client.namespace)
        yield env, buffer, runtime
    finally:
        await env.shutdown()


def _done_so_far(history: WorkflowHistory) -> WorkflowHistory:
    """The history up to its last completed workflow task. A history read from a running workflow may end in
    a task that is scheduled or started but not completed: a replay runs that one as new work, which records
    metrics as the live worker would."""
    events = list(history.events)
    completed = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    last = max(index for index, event in enumerate(events) if event.event_type == completed)
    return WorkflowHistory(history.workflow_id, events[: last + 1])


def _raypilot(updates: list[BufferedMetricUpdate]) -> list[BufferedMetricUpdate]:
    return [update for update in updates if update.metric.name.startswith("raypilot_")]


async def test_replay_does_not_count_rayjob_metrics_twice(
    buffered: tuple[WorkflowEnvironment, MetricBuffer, Runtime],
) -> None:
    env, buffer, runtime = buffered
    world = FakeWorld()
    manifest = rayjob_manifest(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=30)
    async with running_worker(env.client, activities=world.activities(), replay_every_task=True) as queue:
        handle = await start(env.client, manifest, queue)
        result = await handle.result()
    assert result["jobDeploymentStatus"] == "Complete"

    updates = _raypilot(list(buffer.retrieve_updates()))
    entered = Counter(
        update.attributes["deployment_status"]
        for update in updates
        if update.metric.name == m.RAYJOB_STATE_ENTERED
    )
    # Each workflow task replayed the history from the start; still each state counts once.
    assert entered == Counter({"Initializing": 1, "Running": 1, "Complete": 1})
    finished = [update for update in updates if update.metric.name == m.RAYJOB_FINISHED]
    assert [(u.value, u.attributes["reason"]) for u in finished] == [(1, "None")]
    [deletion] = [update for update in updates if update.metric.name == m.RAYJOB_DELETION_ACTIONS]
    assert deletion.attributes["policy"] == "DeleteCluster"
    [lag] = [update for update in updates if update.metric.name == m.RAYJOB_DELETION_LAG_SECONDS]
    # The durable timer fired at endTime + 30 s (time skipped); what remains is the activities' real time, a
    # few seconds on a loaded machine (6.5 s seen beside pytest-xdist workers).
    assert 0 <= lag.value < 15
    # The SDK's meter labels each point with the workflow type (and Temporal namespace, task queue).
    assert {update.attributes.get("workflow_type") for update in updates} == {"RayJobWorkflow"}

    history = await handle.fetch_history()
    replayer = Replayer(workflows=list(WORKFLOWS), data_converter=raypilot_data_converter, runtime=runtime)
    await replayer.replay_workflow(history)
    assert _raypilot(list(buffer.retrieve_updates())) == []


async def test_an_incremental_upgrade_records_its_steps_and_its_end_once(
    buffered: tuple[WorkflowEnvironment, MetricBuffer, Runtime],
) -> None:
    env, buffer, runtime = buffered
    world = FakeRayWorld()
    async with serving(env, world, incremental_manifest()) as (handle, old):
        await apply(handle, incremental_manifest("v2"))
        await eventually(env, upgrade_finished(handle, old))
        history = await handle.fetch_history()
    updates = _raypilot(list(buffer.retrieve_updates()))
    finished = [update for update in updates if update.metric.name == m.RAYSERVICE_UPGRADES_FINISHED]
    assert [(u.value, u.attributes["outcome"]) for u in finished] == [(1, "completed")]
    [duration] = [update for update in updates if update.metric.name == m.RAYSERVICE_UPGRADE_SECONDS]
    assert 30 <= duration.value < 60  # four 25 % steps 10 s apart (workflow time)
    pending_traffic = [
        int(update.value)
        for update in updates
        if update.metric.name == m.RAYSERVICE_TRAFFIC_PERCENT and update.attributes["side"] == "pending"
    ]
    steps = [
        value
        for index, value in enumerate(pending_traffic)
        if index == 0 or value != pending_traffic[index - 1]
    ]
    # The pending cluster's traffic gauge went up in 25 % steps, then to 0 once it became the active one.
    assert steps == [0, 25, 50, 75, 100, 0]
    assert {update.attributes["rayservice"] for update in updates if "rayservice" in update.attributes} == {
        "svc"
    }
    # Replaying what the running workflow has done (as a new worker would) records nothing.
    replayer = Replayer(workflows=list(WORKFLOWS), data_converter=raypilot_data_converter, runtime=runtime)
    await replayer.replay_workflow(_done_so_far(history))
    assert _raypilot(list(buffer.retrieve_updates())) == []
