"""RayJobWorkflow's other deletion mechanisms on fake activities under time skipping: the legacy
onSuccess/onFailure policies with ttlSecondsAfterFinished, shutdownAfterJobFinishes (and
DELETE_RAYJOB_CR_AFTER_JOB_FINISHES=true meaning DeleteSelf, read from the worker's environment),
clusterSelector mode (nothing is ever deleted) and the RayJobDeletionPolicy feature gate. Each workflow
completes once no deletion action remains due and returns the final status. How "exactly endTime + TTL" is
asserted: see test_deletion.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.features import FEATURE_GATES_ENV
from raypilot.testing.rayjob_scenarios import rayjob_manifest, shared_cluster, start
from raypilot.testing.rayjob_world import FAILS, RUNS_FOREVER, SUCCEEDS
from tests.workflows.rayjob.fakes_rayjob_deletion import (
    FakeWorker,
    P,
    TimedWorld,
    assert_effect,
    assert_one_deletion_at,
    assert_timers_set_for,
    due_after_end,
    rule,
    run_to_end,
    with_rules,
)
from tests.workflows.timer_dues import deletion_timer_windows, timers_lasting
from wire import names

# The first backoff after a failed act.
BACKOFF = timedelta(seconds=10)

STOPS: tuple[str, ...] = ("PENDING", "RUNNING", "STOPPED")
TTL = 45


def legacy(on_success: P, on_failure: P, **spec: Any) -> dict[str, Any]:
    strategy = {"onSuccess": {"policy": on_success.value}, "onFailure": {"policy": on_failure.value}}
    if P.DELETE_NONE not in (on_success, on_failure):
        # A TTL needs shutdownAfterJobFinishes, which in turn forbids DeleteNone (KubeRay's validation).
        spec = {"shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": TTL, **spec}
    return rayjob_manifest(deletionStrategy=strategy, **spec)


@pytest.mark.parametrize(
    ("script", "on_success", "on_failure", "expected"),
    [
        (SUCCEEDS, P.DELETE_WORKERS, P.DELETE_CLUSTER, P.DELETE_WORKERS),
        (FAILS, P.DELETE_WORKERS, P.DELETE_CLUSTER, P.DELETE_CLUSTER),
        (SUCCEEDS, P.DELETE_SELF, P.DELETE_CLUSTER, P.DELETE_SELF),
        (FAILS, P.DELETE_CLUSTER, P.DELETE_SELF, P.DELETE_SELF),
    ],
)
async def test_legacy_policy_of_the_outcome_runs_at_end_time_plus_ttl_seconds_after_finished(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    script: tuple[str, ...],
    on_success: P,
    on_failure: P,
    expected: P,
) -> None:
    world = TimedWorld(job_scripts=[script])
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, legacy(on_success, on_failure))

    assert result["jobStatus"] == ("SUCCEEDED" if script == SUCCEEDS else "FAILED")
    assert_one_deletion_at(world, result, timers, expected, TTL)


async def test_legacy_delete_none_deletes_nothing(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = TimedWorld(job_scripts=[FAILS])
    manifest = legacy(P.DELETE_CLUSTER, P.DELETE_NONE)
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Failed", "FAILED")
    assert (timers, world.deletion_calls()) == ([], [])
    assert result["rayClusterName"] in world.clusters


@pytest.mark.parametrize(
    ("script", "spec", "deployment", "reason"),
    [
        # The Ray job was stopped: JobStatus STOPPED is neither success nor failure.
        (STOPS, {}, "Complete", ""),
        # The deployment failed (a deadline) while the Ray job was still running.
        (RUNS_FOREVER, {"activeDeadlineSeconds": 60}, "Failed", "DeadlineExceeded"),
    ],
)
async def test_legacy_policies_take_no_action_without_a_terminal_success_or_failure(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    script: tuple[str, ...],
    spec: dict[str, Any],
    deployment: str,
    reason: str,
) -> None:
    world = TimedWorld(job_scripts=[script])
    manifest = legacy(P.DELETE_SELF, P.DELETE_CLUSTER, **spec)
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert (result["jobDeploymentStatus"], result.get("reason", "")) == (deployment, reason)
    assert result["jobStatus"] not in ("SUCCEEDED", "FAILED")
    assert (timers, world.deletion_calls()) == ([], [])
    assert result["rayClusterName"] in world.clusters


@pytest.mark.parametrize(
    ("script", "spec"),
    [(SUCCEEDS, {}), (FAILS, {}), (STOPS, {}), (RUNS_FOREVER, {"activeDeadlineSeconds": 60})],
)
async def test_shutdown_after_job_finishes_deletes_the_cluster_and_keeps_the_submitter_whatever_the_outcome(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    script: tuple[str, ...],
    spec: dict[str, Any],
) -> None:
    world = TimedWorld(job_scripts=[script])
    manifest = rayjob_manifest(
        mode="K8sJobMode", shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=TTL, **spec
    )
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert result["jobDeploymentStatus"] in ("Complete", "Failed")
    assert_one_deletion_at(world, result, timers, P.DELETE_CLUSTER, TTL)
    # The submitter Job stays for its logs.
    assert list(world.jobs) == ["sample"]


async def test_shutdown_deletes_the_rayjob_itself_when_the_operator_says_so(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a deployed worker does, the workflow reads the setting from the worker's environment.
    monkeypatch.setenv("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "True")
    world = TimedWorld(config_from_env=True)
    manifest = rayjob_manifest(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=TTL)
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert result["jobDeploymentStatus"] == "Complete"
    assert_one_deletion_at(world, result, timers, P.DELETE_SELF, TTL)


@pytest.mark.parametrize(
    "strategy",
    [
        {"deletionRules": [rule(P.DELETE_SELF, 0, "SUCCEEDED"), rule(P.DELETE_NONE, 0, "FAILED")]},
        {"onSuccess": {"policy": "DeleteSelf"}, "onFailure": {"policy": "DeleteSelf"}},
    ],
)
async def test_a_cluster_selector_job_deletes_nothing_even_with_deletion_policies(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, strategy: dict[str, Any]
) -> None:
    world = TimedWorld()
    world.clusters["shared"] = shared_cluster()
    manifest = rayjob_manifest(
        rayClusterSpec=None, clusterSelector={"ray.io/cluster": "shared"}, deletionStrategy=strategy
    )
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert (result["jobDeploymentStatus"], result["rayClusterName"]) == ("Complete", "shared")
    assert (timers, world.deletion_calls(), world.deleted_resources) == ([], [], [])
    assert world.clusters["shared"]["metadata"].get("deletionTimestamp") is None


async def test_deletion_strategy_is_a_validation_error_when_the_gate_is_off_in_the_environment(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FEATURE_GATES_ENV, "RayJobDeletionPolicy=false")
    world = TimedWorld(config_from_env=True)
    manifest = with_rules(rule(P.DELETE_CLUSTER, 0, "SUCCEEDED"))
    client = time_skipping_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await start(client, manifest, queue)
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        status = await handle.query("status")
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.message) == (
        "ValidationFailed",
        "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy",
    )
    assert (status["jobDeploymentStatus"], status["reason"]) == ("ValidationFailed", "ValidationFailed")
    # Valid with every gate on: the run read the configuration with its earlier run (one look, nothing made).
    assert [call for call, _ in world.calls] == [names.LATEST_EARLIER_RUN]


@pytest.mark.parametrize(
    ("policy", "failure_event", "success_event"),
    [
        (P.DELETE_CLUSTER, "FailedToDeleteRayCluster", "DeletedRayCluster"),
        (P.DELETE_WORKERS, "FailedToUpdateRayCluster", "UpdatedRayCluster"),
    ],
)
async def test_a_rejected_deletion_is_reported_and_tried_again_after_a_backoff(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    policy: P,
    failure_event: str,
    success_event: str,
) -> None:
    world = TimedWorld(rejected_deletions=1, clock=time_skipping_env.get_current_time)
    async with fake_worker(time_skipping_env.client, activities=world.activities()) as queue:
        handle = await start(time_skipping_env.client, with_rules(rule(policy, TTL, "SUCCEEDED")), queue)
        result: dict[str, Any] = await handle.result()

    due = due_after_end(result, TTL)
    (_, rejected_at), (_, retried_at) = world.deletion_calls()
    # The rejected call answered the policy's own timer; the retry came after the first backoff of a failed
    # act, 10 s (a controller's rate-limited requeue), on a timer of its own. The timers are the workflow's
    # decisions; when a loaded machine ran what they woke is not.
    assert_timers_set_for(await deletion_timer_windows(handle), [due])
    assert due <= rejected_at
    backoffs = await timers_lasting(handle, BACKOFF)
    assert len(backoffs) == 1, backoffs
    assert rejected_at < backoffs[0] <= retried_at, (rejected_at, backoffs, retried_at)
    reasons = world.event_reasons()
    assert reasons[-2:] == [failure_event, success_event]
    assert "Forbidden" in world.events[-2].message or "forbidden" in world.events[-2].message
    assert_effect(world, policy, result["rayClusterName"])


async def test_delete_self_of_a_rayjob_the_controller_drives_deletes_the_raypilot_io_object(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    """Issue #17: never the ray.io RayJob of the same name (KubeRay's, perhaps), but the raypilot.io one."""
    world = TimedWorld()
    manifest = legacy(P.DELETE_SELF, P.DELETE_SELF)
    manifest["metadata"]["annotations"] = {"raypilot.io/object-api-version": "raypilot.io/v1"}
    await run_to_end(time_skipping_env, fake_worker, world, manifest)
    [deleted] = world.deleted_resources
    assert (deleted.api_version, deleted.kind, deleted.name) == ("raypilot.io/v1", "RayJob", "sample")
