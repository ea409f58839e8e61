"""RayServiceWorkflow lifecycle: suspend and resume, the terminal initializing timeout, delete, invalid input
(nothing created), and Serve applications lost by a head restart being submitted again."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    condition_of,
    eventually,
    rayservice_manifest,
    running_rayservice,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import apply, serving, status_when, with_condition
from wire import names
from workflows.search_attributes import RAY_PHASE


async def test_suspend_deletes_everything_owned_and_resume_starts_over(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, first):
        await apply(handle, rayservice_manifest(suspend=True))
        suspended = await status_when(env, handle, with_condition("Suspended"))
        assert world.live_clusters() == []
        assert world.services == {}
        assert condition_of(suspended, "Suspending") == ("False", "SuspendComplete")
        assert condition_of(suspended, "Ready") == ("False", "SuspendComplete")
        assert "activeServiceStatus" not in suspended
        assert suspended.get("numServeEndpoints", 0) == 0

        await apply(handle, rayservice_manifest(suspend=False))
        resumed = await until_ready(env, handle)
    assert condition_of(resumed, "Suspended") == ("False", "RayServiceResumed")
    [second] = world.live_clusters()
    assert second != first
    assert resumed["activeServiceStatus"]["rayClusterName"] == second


async def test_initializing_timeout_is_terminal_and_cleans_up(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    world.serve_mode_for_new_clusters = "deploying"
    manifest = rayservice_manifest(annotations={"ray.io/initializing-timeout": "5m"})
    async with running_rayservice(env, world, manifest) as handle:
        started = await env.get_current_time()
        failed = await status_when(
            env,
            handle,
            with_condition("Ready", status=None, reason="InitializingTimeout"),
            step=timedelta(seconds=10),
        )
        assert await env.get_current_time() - started < timedelta(minutes=5, seconds=15)
        ready = next(c for c in failed["conditions"] if c["type"] == "Ready")
        assert ready["message"].startswith(
            "RayService failed to become ready within the configured timeout of 5m0s"
        )
        assert "rayClusterName" not in failed.get("activeServiceStatus", {})
        assert "rayClusterName" not in failed.get("pendingServiceStatus", {})
        [cluster] = world.acts("create", "RayCluster")

        async def cleaned_up() -> bool:
            return world.live_clusters() == []

        await eventually(env, cleaned_up, step=timedelta(seconds=10))
        # A valid new spec does not bring it back (KubeRay: delete and recreate the RayService).
        world.serve_mode_for_new_clusters = "running"
        await apply(handle, rayservice_manifest(version="v2"))
        await env.sleep(timedelta(minutes=2))
        after = await status_of(handle)
        description = await handle.describe()
    assert [act.name for act in world.acts("delete", "RayCluster")] == [cluster.name]
    assert len(world.acts("create", "RayCluster")) == 1
    assert condition_of(after, "Ready") == ("False", "InitializingTimeout")
    warnings = [event.reason for event in world.events if event.type == "Warning"]
    assert warnings == ["RayServiceInitializingTimeout"]
    assert description.typed_search_attributes.get(RAY_PHASE) == "Failed"


async def test_delete_removes_every_owned_object_and_completes(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, _):
        result = await handle.execute_update("delete", result_type=dict)
        final = await handle.result()
    clusters = [f"RayCluster/{name}" for name in world.deleted_clusters]
    assert sorted(result["deleted"]) == sorted([*clusters, "Service/svc-head-svc", "Service/svc-serve-svc"])
    assert world.live_clusters() == []
    assert world.services == {}
    assert condition_of(final, "Ready")[0] == "True"


async def test_delete_with_the_orphan_policy_lets_go_of_every_owned_object(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, active):
        result = await handle.execute_update("delete", {"propagationPolicy": "Orphan"}, result_type=dict)
        final = await handle.result()
    assert result == {"deleted": [], "orphaned": True}
    assert world.acts("delete") == []
    assert world.live_clusters() == [active]
    assert sorted(world.services) == ["svc-head-svc", "svc-serve-svc"]
    assert final["activeServiceStatus"]["rayClusterName"] == active


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        (
            {"propagationPolicy": "Sideways"},
            "propagationPolicy must be one of Background, Foreground, Orphan",
        ),
        ({"cascade": "orphan"}, "unknown field of the delete request: cascade"),
    ],
)
async def test_a_delete_request_it_does_not_know_is_refused_and_changes_nothing(
    time_skipping_env: WorkflowEnvironment, request_body: dict[str, str], message: str
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, _):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("delete", request_body, result_type=dict)
        assert isinstance(refused.value.cause, ApplicationError)
        assert message in str(refused.value.cause)
        await apply(handle, rayservice_manifest(suspend=True))  # still managed: an apply is taken
        await status_when(env, handle, with_condition("Suspended"))
    assert world.acts("delete", "RayCluster") != []


async def test_delete_completes_while_a_serve_wait_is_lost_with_its_worker(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    # The settled Serve wait heartbeats once a minute: lost with a killed worker, its cancellation would be
    # recorded only at its 3-minute heartbeat timeout. The deletion does not wait for it.
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, _):
        world.serve_waits_lost = True
        await env.sleep(world.unchanged_retry or timedelta(0))  # the wait's next attempt starts, and hangs
        await asyncio.wait_for(world.serve_wait_lost.wait(), timeout=60)
        result = await asyncio.wait_for(handle.execute_update("delete", result_type=dict), timeout=60)
        await asyncio.wait_for(handle.result(), timeout=60)
        history = await handle.fetch_history()
    assert world.live_clusters() == []
    assert f"RayCluster/{world.deleted_clusters[0]}" in result["deleted"]
    # What the run decided: the lost wait's cancellation was requested, and the run completed without it
    # being recorded (no ActivityTaskCanceled, nor any other end of that wait).
    serve_waits = {
        event.event_id
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name == names.WAIT_SERVE
    }
    cancel_requested = {
        event.activity_task_cancel_requested_event_attributes.scheduled_event_id
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED
    } & serve_waits
    ended = {
        getattr(event, f"{kind}_event_attributes").scheduled_event_id
        for event in history.events
        for kind in ("activity_task_completed", "activity_task_failed", "activity_task_canceled")
        if event.WhichOneof("attributes") == f"{kind}_event_attributes"
    }
    assert cancel_requested, serve_waits
    assert not cancel_requested & ended, (cancel_requested, ended)
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m["spec"].update(unknownField=1), "unknownField"),
        (lambda m: m["metadata"].update(name="x" * 48), "name should be no more than 47 characters"),
        (lambda m: m["spec"].update(rayClusterDeletionDelaySeconds=-1), "RayClusterDeletionDelaySeconds"),
        (lambda m: m["spec"].update(upgradeStrategy={"type": "Recreate"}), "Spec.UpgradeStrategy.Type value"),
    ],
)
async def test_an_invalid_manifest_fails_the_workflow_at_once_creating_nothing(
    time_skipping_env: WorkflowEnvironment, change: Any, message: str
) -> None:
    world = FakeRayWorld()
    manifest = rayservice_manifest()
    change(manifest)
    async with running_rayservice(time_skipping_env, world, manifest) as handle:
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "ValidationFailed"
    assert cause.non_retryable
    assert message in cause.message
    assert world.log == []


async def test_apply_rejects_invalid_or_mismatched_manifests_and_changes_nothing(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    invalid = rayservice_manifest(version="v2")
    invalid["spec"]["rayClusterDeletionDelaySeconds"] = -5
    async with running_rayservice(env, world, rayservice_manifest()) as handle:
        before = await until_ready(env, handle)
        for manifest, message in (
            (invalid, "Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got -5"),
            (rayservice_manifest(name="other", version="v2"), "metadata.name is immutable"),
            ({"apiVersion": "ray.io/v1", "kind": "RayJob"}, "unsupported kind"),
        ):
            with pytest.raises(WorkflowUpdateFailedError) as rejected:
                await apply(handle, manifest)
            cause = rejected.value.cause
            assert isinstance(cause, ApplicationError)
            assert cause.type == "ValidationFailed"
            assert message in cause.message
        same = await apply(handle, rayservice_manifest())
        assert same == {"generation": 1}
        await env.sleep(timedelta(minutes=1))
        after = await status_of(handle)
    assert len(world.acts("create", "RayCluster")) == 1
    assert after["observedGeneration"] == before["observedGeneration"] == 1


async def test_applications_lost_by_a_head_restart_are_submitted_again(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, cluster):
        world.restart_head(cluster)

        async def resubmitted() -> bool:
            return len(world.acts("put")) == 2

        await eventually(env, resubmitted)

        async def running_again() -> bool:
            status = await status_of(handle)
            apps = status["activeServiceStatus"].get("applicationStatuses") or {}
            return apps.get("app", {}).get("status") == "RUNNING"

        await eventually(env, running_again)
    assert [act.name for act in world.acts("put")] == [cluster, cluster]
    head_labels = [act.detail for act in world.acts("label")]
    assert head_labels == [{"ray.io/serve": "true"}, {"ray.io/serve": "true"}]


async def test_a_head_not_ready_at_first_is_waited_for(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    world.heads_start_ready = False
    async with running_rayservice(env, world, rayservice_manifest()) as handle:

        async def created() -> bool:
            return bool(world.live_clusters())

        await eventually(env, created)
        await env.sleep(timedelta(minutes=5))
        waiting = await status_of(handle)
        assert condition_of(waiting, "Ready") == ("False", "Initializing")
        assert world.acts("put") == []
        [cluster] = world.live_clusters()
        world.clusters[cluster].head_ready = True
        status = await until_ready(env, handle)
    assert status["activeServiceStatus"]["rayClusterName"] == cluster
