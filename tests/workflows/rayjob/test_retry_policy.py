"""Retries that fit the failure on fake activities under time skipping: `raypilot.io/retry-policy` fails fast
on an application error, backs off between attempts on durable timers, retries on the same RayCluster
(HTTPMode), passes RAYJOB_ATTEMPT to each attempt and shows the attempt in the status; and, as in KubeRay
today (with or without a policy), a retry on a new RayCluster creates it only once the previous attempt's
cluster is gone (kuberay#5211: no overlap)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import eventually, rayjob_manifest, start, status_of
from raypilot.testing.rayjob_world import FAILS, SUCCEEDS, FakeActivities, FakeWorld
from wire import names
from wire.dashboard import SubmitJob
from wire.kubernetes import CreateObject
from workflows.decisions.rayjob.attempts import ATTEMPT_ENV
from workflows.decisions.rayjob.retry_policy import RETRY_POLICY_ANNOTATION

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
BACKOFF_SUMMARY = "retry back-off"
POLICY = {
    "classes": {
        "Application": {"retry": False},
        "RuntimeEnvSetup": {"backoff": {"initial": "30s", "factor": 2}},
        "SupervisorStart": {"sameCluster": True},
    }
}


def _manifest(policy: dict[str, Any] | None = POLICY, **spec: Any) -> dict[str, Any]:
    manifest = rayjob_manifest(**{"backoffLimit": 3, **spec})
    if policy is not None:
        manifest["metadata"]["annotations"] = {RETRY_POLICY_ANNOTATION: json.dumps(policy)}
    return manifest


async def _run(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: FakeWorld, manifest: dict[str, Any]
) -> tuple[dict[str, Any], WorkflowHandle[Any, Any]]:
    async with fake_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        result: dict[str, Any] = await handle.result()
    return result, handle


async def _backoff_timers(handle: WorkflowHandle[Any, Any]) -> list[timedelta]:
    durations: list[timedelta] = []
    async for event in handle.fetch_history_events():
        if (
            event.HasField("timer_started_event_attributes")
            and BACKOFF_SUMMARY.encode() in event.user_metadata.summary.data
        ):
            durations.append(event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta())
    return durations


def _submissions(world: FakeWorld) -> list[dict[str, Any]]:
    return [request.request for request in world.called(names.SUBMIT_JOB) if isinstance(request, SubmitJob)]


def _attempt_env(submission: dict[str, Any]) -> str:
    return str(submission["runtime_env"]["env_vars"][ATTEMPT_ENV])


def _condition(result: dict[str, Any]) -> dict[str, Any]:
    [condition] = [c for c in result.get("conditions", []) if c["type"] == "RayJobAttempt"]
    return condition


async def test_an_application_error_fails_fast_where_kuberay_retries(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    errors = ["JOB_ENTRYPOINT_COMMAND_ERROR"]
    world = FakeWorld(job_scripts=[FAILS], job_error_types=errors)
    result, _ = await _run(time_skipping_env, fake_worker, world, _manifest())
    assert (result["jobDeploymentStatus"], result["failed"]) == ("Failed", 1)
    assert len(world.called(names.CREATE_RAYCLUSTER)) == 1
    assert (_condition(result)["status"], _condition(result)["reason"]) == ("False", "ApplicationNotRetried")

    kuberay = FakeWorld(job_scripts=[FAILS], job_error_types=errors)
    result, _ = await _run(time_skipping_env, fake_worker, kuberay, _manifest(policy=None, backoffLimit=1))
    assert (result["jobDeploymentStatus"], result["failed"]) == ("Failed", 2)
    assert "RayJobAttempt" not in [condition["type"] for condition in result.get("conditions", [])]
    assert all("runtime_env" not in submission for submission in _submissions(kuberay))


async def test_a_runtime_env_failure_is_retried_after_a_growing_backoff_with_the_attempt_number(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS, FAILS, SUCCEEDS], job_error_types=["RUNTIME_ENV_SETUP_FAILURE"])
    result, handle = await _run(time_skipping_env, fake_worker, world, _manifest())

    assert (result["jobDeploymentStatus"], result["failed"], result["succeeded"]) == ("Complete", 2, 1)
    # Armed for failure time + back-off, a few milliseconds after the failure was settled.
    assert [round(timer.total_seconds()) for timer in await _backoff_timers(handle)] == [30, 60]
    assert [_attempt_env(submission) for submission in _submissions(world)] == ["1", "2", "3"]
    assert len(world.called(names.CREATE_RAYCLUSTER)) == 3
    assert _condition(result)["message"] == (
        "attempt 3: attempt 2 failed (RuntimeEnvSetup); retried on a new RayCluster after 60s"
    )


async def test_a_supervisor_start_failure_is_retried_on_the_same_cluster(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(
        job_scripts=[FAILS, SUCCEEDS], job_error_types=["JOB_SUPERVISOR_ACTOR_START_FAILURE", ""]
    )
    result, _ = await _run(time_skipping_env, fake_worker, world, _manifest())

    assert (result["jobDeploymentStatus"], result["failed"], result["succeeded"]) == ("Complete", 1, 1)
    [created] = world.called(names.CREATE_RAYCLUSTER)
    assert isinstance(created, CreateObject)
    assert result["rayClusterName"] == created.body["metadata"]["name"]
    assert world.called(names.DELETE_RAYCLUSTER) == []
    first, second = _submissions(world)
    assert first["submission_id"] != second["submission_id"]
    assert (_attempt_env(first), _attempt_env(second)) == ("1", "2")
    assert "same RayCluster" in _condition(result)["message"]


class HeldClusters(FakeActivities):
    """Every RayCluster is held by a finalizer once deleted; each create records the clusters still there."""

    live_at_create: list[set[str]]

    @activity.defn(name=names.CREATE_RAYCLUSTER)
    async def create_raycluster(self, request: CreateObject) -> dict[str, Any]:
        self.live_at_create.append(set(self.world.clusters))
        self.world.finalizers.add(request.body["metadata"]["name"])
        return await super().create_raycluster(request)


async def test_a_retry_creates_its_cluster_only_once_the_previous_one_is_gone(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld(job_scripts=[FAILS, SUCCEEDS])
    activities = HeldClusters(world)
    activities.live_at_create = []
    client = time_skipping_env.client
    async with fake_worker(client, activities=activities.all()) as queue:
        handle = await start(client, _manifest(policy=None, backoffLimit=1), queue)
        first = ""

        async def first_cluster_deleting() -> bool:
            nonlocal first
            first = str((await status_of(handle)).get("rayClusterName") or first)
            cluster = world.clusters.get(first, {})
            return bool(cluster.get("metadata", {}).get("deletionTimestamp"))

        await eventually(first_cluster_deleting)
        # Retrying waits for the finalizer: a minute later there is still no second cluster.
        await time_skipping_env.sleep(timedelta(minutes=1))
        assert (await status_of(handle))["jobDeploymentStatus"] == "Retrying"
        assert len(activities.live_at_create) == 1
        world.release_finalizer(first)
        result = await handle.result()

    assert (result["jobDeploymentStatus"], result["failed"]) == ("Complete", 1)
    assert activities.live_at_create == [set(), set()]
