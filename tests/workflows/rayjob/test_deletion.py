"""RayJobWorkflow's deletionRules on fake activities under time skipping: each policy at exactly endTime + TTL
for each condition, rules whose condition does not match, staged rules, and KubeRay's catch-up after the
worker was down past several due times (only the most impactful overdue rule runs, completed ones never).

"Exactly" is asserted twice. The history shows each deletion timer was set for endTime + TTL itself (not
KubeRay's 2 s later), to the millisecond. The fake saw each policy's first call no earlier than that in the
server's (workflow) time, and soon after it: the delay is the worker's (a timer counts from the completion of
the task that armed it; a woken task replays the history first), 0.1-0.3 s on an idle machine; the loose
bound only catches a missed or extra wait.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import start, until_phase
from raypilot.testing.rayjob_world import FAILS, RUNS_FOREVER, SUCCEEDS
from tests.workflows.rayjob.fakes_rayjob_deletion import (
    FakeWorker,
    P,
    TimedWorld,
    assert_effect,
    assert_fired_at,
    assert_one_deletion_at,
    assert_timers_set_for,
    due_after_end,
    rule,
    run_to_end,
    with_rules,
)
from tests.workflows.timer_dues import deletion_timer_windows
from wire import names

OUTCOMES = {"SUCCEEDED": (SUCCEEDS, "Complete"), "FAILED": (FAILS, "Failed")}


@pytest.mark.parametrize("policy", [P.DELETE_WORKERS, P.DELETE_CLUSTER, P.DELETE_SELF])
@pytest.mark.parametrize("job_status", ["SUCCEEDED", "FAILED"])
async def test_a_rule_fires_at_exactly_end_time_plus_ttl_and_unmatched_rules_do_nothing(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, policy: P, job_status: str
) -> None:
    script, deployment = OUTCOMES[job_status]
    other_status = "FAILED" if job_status == "SUCCEEDED" else "SUCCEEDED"
    # A more impactful rule for the other outcome, due earlier: it must not run.
    unmatched = P.DELETE_CLUSTER if policy == P.DELETE_SELF else P.DELETE_SELF
    world = TimedWorld(job_scripts=[script])
    manifest = with_rules(rule(policy, 90, job_status), rule(unmatched, 10, other_status))
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == (deployment, job_status)
    assert_one_deletion_at(world, result, timers, policy, 90)


@pytest.mark.parametrize("job_status", ["SUCCEEDED", "FAILED"])
async def test_a_delete_none_rule_deletes_nothing_and_the_workflow_completes_at_its_due_time(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, job_status: str
) -> None:
    script, deployment = OUTCOMES[job_status]
    world = TimedWorld(job_scripts=[script])
    result, timers = await run_to_end(
        time_skipping_env, fake_worker, world, with_rules(rule(P.DELETE_NONE, 30, job_status))
    )
    assert result["jobDeploymentStatus"] == deployment
    assert_timers_set_for(timers, [due_after_end(result, 30)])
    assert world.deletion_calls() == []
    assert result["rayClusterName"] in world.clusters


async def test_a_deployment_failure_matches_job_deployment_status_rules_only(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    # The deadline fails the deployment while the Ray job itself never reached FAILED.
    world = TimedWorld(job_scripts=[RUNS_FOREVER])
    manifest = with_rules(
        rule(P.DELETE_CLUSTER, 20, deployment="Failed"),
        rule(P.DELETE_SELF, 5, job_status="FAILED"),
        activeDeadlineSeconds=60,
    )
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "DeadlineExceeded")
    assert result["jobStatus"] != "FAILED"
    assert_one_deletion_at(world, result, timers, P.DELETE_CLUSTER, 20)


async def test_staged_rules_run_workers_then_cluster_then_self_at_their_times(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = TimedWorld()
    manifest = with_rules(
        rule(P.DELETE_WORKERS, 0, "SUCCEEDED"),
        rule(P.DELETE_CLUSTER, 5, "SUCCEEDED"),
        rule(P.DELETE_SELF, 10, "SUCCEEDED"),
    )
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert result["jobDeploymentStatus"] == "Complete"
    # DeleteWorkers is due at once (endTime has whole seconds, so it is already past): no timer for it.
    assert_timers_set_for(timers, [due_after_end(result, 5), due_after_end(result, 10)])
    assert_fired_at(
        world,
        [
            (P.DELETE_WORKERS, due_after_end(result, 0)),
            (P.DELETE_CLUSTER, due_after_end(result, 5)),
            (P.DELETE_SELF, due_after_end(result, 10)),
        ],
    )
    assert_effect(world, P.DELETE_SELF, result["rayClusterName"])


@pytest.mark.parametrize(
    ("self_ttl", "recovered", "later"),
    [
        # Back after the Workers and Cluster deadlines: only DeleteCluster runs, DeleteWorkers never (its aim
        # holds once the cluster is gone); DeleteSelf still runs at its own due time.
        (90, P.DELETE_CLUSTER, [(P.DELETE_SELF, 90)]),
        # Back after every deadline: DeleteSelf runs directly.
        (32, P.DELETE_SELF, []),
    ],
)
async def test_after_downtime_only_the_most_impactful_overdue_rule_runs(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    self_ttl: int,
    recovered: P,
    later: list[tuple[P, int]],
) -> None:
    env = time_skipping_env
    world = TimedWorld(clock=env.get_current_time)
    manifest = with_rules(
        rule(P.DELETE_WORKERS, 30, "SUCCEEDED"),
        rule(P.DELETE_CLUSTER, 31, "SUCCEEDED"),
        rule(P.DELETE_SELF, self_ttl, "SUCCEEDED"),
    )
    async with fake_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        # Time runs at wall-clock speed while no result is awaited: the first rule is due 30 s after the end,
        # time enough to stop the worker before it even on a busy machine.
        finished = await until_phase(handle, "Complete")
    assert world.deletion_calls() == []
    # No worker: time skips to the first timer, which fires on the server with nobody to act on it. The test
    # server never skips time while a workflow task is pending, so the rest of the downtime passes in real
    # time: keep it short.
    await env.sleep(timedelta(seconds=33))
    back_at = await env.get_current_time()
    async with fake_worker(env.client, activities=world.activities(), task_queue=queue):
        result: dict[str, Any] = await handle.result()

    assert result["endTime"] == finished["endTime"]
    calls = world.deletion_calls()
    # At the recovery, on no timer of its own: the timers checked below are the first rule's and the later
    # rules' only (however long a loaded machine took to start the worker and run the task).
    assert back_at <= calls[0][1]
    expected = [(recovered, calls[0][1]), *((policy, due_after_end(result, ttl)) for policy, ttl in later)]
    assert_fired_at(world, expected)
    assert world.called(names.SUSPEND_WORKER_GROUPS) == []
    assert_effect(world, expected[-1][0], result["rayClusterName"])
    # The timer for the first rule, and one for each rule still to come after the recovery.
    dues = [due_after_end(result, 30), *(due_after_end(result, ttl) for _, ttl in later)]
    assert_timers_set_for(await deletion_timer_windows(handle), dues)


async def test_a_rule_whose_aim_already_holds_is_a_no_op(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    # Both rules match a failed Ray job; the second finds every worker group suspended already.
    world = TimedWorld(job_scripts=[FAILS])
    manifest = with_rules(
        rule(P.DELETE_WORKERS, 0, "FAILED"),
        rule(P.DELETE_WORKERS, 30, deployment="Failed"),
    )
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, manifest)

    assert result["jobDeploymentStatus"] == "Failed"
    assert_timers_set_for(timers, [due_after_end(result, 30)])
    assert_fired_at(world, [(P.DELETE_WORKERS, due_after_end(result, 0))])
    assert_effect(world, P.DELETE_WORKERS, result["rayClusterName"])


async def test_rules_all_due_at_the_end_run_delete_self_directly(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = TimedWorld()
    rules = [rule(policy, 0, "SUCCEEDED") for policy in (P.DELETE_WORKERS, P.DELETE_CLUSTER, P.DELETE_SELF)]
    result, timers = await run_to_end(time_skipping_env, fake_worker, world, with_rules(*rules))

    assert timers == []
    assert_fired_at(world, [(P.DELETE_SELF, due_after_end(result, 0))])
    assert_effect(world, P.DELETE_SELF, result["rayClusterName"])
