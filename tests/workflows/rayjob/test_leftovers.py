"""No silent leaks (kuberay#5184) on fake activities under time skipping: activeDeadlineSeconds fails a
RayJob whose Ray job stays RUNNING and whose deletion rules name only SUCCEEDED and FAILED. KubeRay keeps the
cluster without a word; raypilot records a Warning Event and the RayClusterLeftBehind condition, and with
`raypilot.io/cleanup-after` deletes the cluster at endTime + that delay."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import start
from raypilot.testing.rayjob_world import RUNS_FOREVER, SUCCEEDS
from tests.workflows.rayjob.fakes_rayjob_deletion import (
    FakeWorker,
    P,
    TimedWorld,
    assert_fired_at,
    assert_one_deletion_at,
    due_after_end,
    rule,
    with_rules,
)
from tests.workflows.timer_dues import deletion_timer_windows
from workflows.decisions.rayjob.leftovers import CLEANUP_AFTER_ANNOTATION, LEFT_BEHIND_CONDITION


def _deadline_job(cleanup: str | None = None, **spec: Any) -> dict[str, Any]:
    manifest = with_rules(rule(P.DELETE_CLUSTER, 0, "SUCCEEDED"), rule(P.DELETE_CLUSTER, 0, "FAILED"), **spec)
    if cleanup is not None:
        manifest["metadata"]["annotations"] = {CLEANUP_AFTER_ANNOTATION: cleanup}
    return manifest


async def _run(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: TimedWorld, manifest: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, str]], list[Any]]:
    world.clock = env.get_current_time
    async with fake_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        result: dict[str, Any] = await handle.result()
        events: list[dict[str, str]] = await handle.query("events")
    return result, events, await deletion_timer_windows(handle)


def _left_behind_events(events: list[dict[str, str]]) -> list[dict[str, str]]:
    return [event for event in events if event["reason"] == "RayClusterLeftBehind"]


async def test_a_deadline_failure_no_rule_matches_is_reported_and_the_cluster_stays(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = TimedWorld(job_scripts=[RUNS_FOREVER])
    result, events, timers = await _run(
        time_skipping_env, fake_worker, world, _deadline_job(activeDeadlineSeconds=60)
    )

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "DeadlineExceeded")
    assert result["jobStatus"] == "RUNNING"
    cluster = result["rayClusterName"]
    [event] = _left_behind_events(events)
    assert event["type"] == "Warning"
    assert f"RayCluster default/{cluster} stays" in event["message"]
    [condition] = [c for c in result["conditions"] if c["type"] == LEFT_BEHIND_CONDITION]
    assert (condition["type"], condition["status"]) == (LEFT_BEHIND_CONDITION, "True")
    assert condition["message"] == event["message"]
    # What KubeRay does otherwise: nothing is deleted, no timer waits for anything.
    assert world.deletion_calls() == []
    assert cluster in world.clusters
    assert timers == []


async def test_cleanup_after_deletes_the_cluster_left_behind_at_end_time_plus_the_delay(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = TimedWorld(job_scripts=[RUNS_FOREVER])
    result, events, timers = await _run(
        time_skipping_env, fake_worker, world, _deadline_job("10m", activeDeadlineSeconds=60)
    )

    assert_one_deletion_at(world, result, timers, P.DELETE_CLUSTER, 600)
    assert len(_left_behind_events(events)) == 1
    [condition] = [c for c in result["conditions"] if c["type"] == LEFT_BEHIND_CONDITION]
    assert (condition["type"], condition["status"]) == (LEFT_BEHIND_CONDITION, "False")


async def test_a_matching_rule_runs_as_in_kuberay_and_nothing_is_reported(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = TimedWorld(job_scripts=[SUCCEEDS])
    result, events, timers = await _run(time_skipping_env, fake_worker, world, _deadline_job("10m"))

    assert result["jobStatus"] == "SUCCEEDED"
    assert "conditions" not in result
    assert _left_behind_events(events) == []
    assert timers == []
    assert_fired_at(world, [(P.DELETE_CLUSTER, due_after_end(result, 0))])


async def test_a_bad_cleanup_after_fails_validation_and_creates_nothing(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = TimedWorld()
    with pytest.raises(WorkflowFailureError) as failure:
        await _run(time_skipping_env, fake_worker, world, _deadline_job("ten minutes"))
    cause = failure.value.cause
    assert CLEANUP_AFTER_ANNOTATION in str(cause)
    assert world.clusters == {}
