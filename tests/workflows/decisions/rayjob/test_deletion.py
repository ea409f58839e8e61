"""RayJob deletion: precedence, deletionRules (single, all-TTL-0, staged, catch-up), legacy and shutdown
paths, the completion checks and the DeleteWorkers manifest change (KubeRay's envtest deletion cases)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from models.features import FeatureGates
from models.operator import OperatorConfig
from models.rayjob import DeletionPolicyType
from tests.models.kuberay_documents import deletion_rule
from tests.workflows.decisions.rayjob.rayjobs import CONFIG, END, finished_job
from workflows.decisions.rayjob.deletion import (
    ClusterDeletionObservation,
    DeletionMechanism,
    DeletionStep,
    deletion_completions,
    deletion_mechanism,
    is_deletion_action_completed,
    most_impactful_rule,
    next_deletion_step,
)

P = DeletionPolicyType
NOTHING_DONE: dict[DeletionPolicyType, bool] = {}


def rule(
    policy: str, ttl: int = 0, job_status: str | None = "SUCCEEDED", deployment: str | None = None
) -> dict[str, Any]:
    """A deletion rule for a SUCCEEDED job unless said otherwise; one on a deployment status has no job
    status."""
    return deletion_rule(policy, ttl, None if deployment is not None else job_status, deployment)


def rules_spec(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"deletionStrategy": {"deletionRules": list(rules)}}


def legacy_spec(on_success: str, on_failure: str, ttl: int = 0) -> dict[str, Any]:
    return {
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": ttl,
        "deletionStrategy": {"onSuccess": {"policy": on_success}, "onFailure": {"policy": on_failure}},
    }


def at(seconds: float) -> datetime:
    return END + timedelta(seconds=seconds)


# ---- precedence -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "gate", "mechanism"),
    [
        (
            {"clusterSelector": {"ray.io/cluster": "c"}, **rules_spec(rule("DeleteSelf"))},
            True,
            "ClusterSelector",
        ),
        (rules_spec(rule("DeleteCluster")), True, "DeletionRules"),
        (legacy_spec("DeleteCluster", "DeleteNone"), True, "LegacyPolicy"),
        # Gate off: a deletionStrategy is ignored here (validation rejects it first).
        (
            {"shutdownAfterJobFinishes": True, **rules_spec(rule("DeleteCluster"))},
            False,
            "ShutdownAfterJobFinishes",
        ),
        ({"shutdownAfterJobFinishes": True}, True, "ShutdownAfterJobFinishes"),
        ({}, True, "None"),
        (rules_spec(rule("DeleteCluster")), False, "None"),
    ],
)
def test_deletion_mechanism_precedence(spec: dict[str, Any], gate: bool, mechanism: str) -> None:
    config = OperatorConfig(feature_gates=FeatureGates(ray_job_deletion_policy=gate))
    assert deletion_mechanism(finished_job(spec), config) == DeletionMechanism(mechanism)


def test_nothing_to_do_for_selector_unconfigured_or_unfinished_jobs() -> None:
    selector = {"clusterSelector": {"ray.io/cluster": "c"}, **rules_spec(rule("DeleteSelf"))}
    assert next_deletion_step(finished_job(selector), at(100), NOTHING_DONE, CONFIG).done
    assert next_deletion_step(finished_job({}), at(100), NOTHING_DONE, CONFIG).done
    running = finished_job(
        rules_spec(rule("DeleteSelf")), job_status="RUNNING", deployment="Running", end=None
    )
    assert next_deletion_step(running, at(100), NOTHING_DONE, CONFIG).done


# ---- completion checks ----------------------------------------------------------------------------

GONE = ClusterDeletionObservation(exists=False)
DELETING = ClusterDeletionObservation(exists=True, deleting=True)
WORKERS_SUSPENDED = ClusterDeletionObservation(exists=True, all_worker_groups_suspended=True)
RUNNING_CLUSTER = ClusterDeletionObservation(exists=True)


@pytest.mark.parametrize(
    ("cluster", "workers", "cluster_done", "self_done", "none_done"),
    [
        (GONE, True, True, False, True),
        (DELETING, True, True, False, True),
        (WORKERS_SUSPENDED, True, False, False, True),
        (RUNNING_CLUSTER, False, False, False, True),
    ],
)
def test_is_deletion_action_completed(
    cluster: ClusterDeletionObservation, workers: bool, cluster_done: bool, self_done: bool, none_done: bool
) -> None:
    assert is_deletion_action_completed(P.DELETE_WORKERS, cluster) == workers
    assert is_deletion_action_completed(P.DELETE_CLUSTER, cluster) == cluster_done
    assert is_deletion_action_completed(P.DELETE_SELF, cluster) == self_done
    assert is_deletion_action_completed(P.DELETE_NONE, cluster) == none_done
    assert deletion_completions(cluster)[P.DELETE_CLUSTER] == cluster_done


@pytest.mark.parametrize(
    ("manifest", "observation"),
    [
        (None, GONE),
        (
            {"metadata": {"deletionTimestamp": "2025-08-01T10:00:00Z"}, "spec": {"workerGroupSpecs": [{}]}},
            DELETING,
        ),
        (
            {"metadata": {}, "spec": {"workerGroupSpecs": [{"suspend": True}, {"suspend": True}]}},
            WORKERS_SUSPENDED,
        ),
        ({"metadata": {}, "spec": {"workerGroupSpecs": [{"suspend": True}, {}]}}, RUNNING_CLUSTER),
        ({"metadata": {}, "spec": {"workerGroupSpecs": [{"suspend": False}]}}, RUNNING_CLUSTER),
    ],
)
def test_cluster_observation_from_manifest(
    manifest: dict[str, Any] | None, observation: ClusterDeletionObservation
) -> None:
    assert ClusterDeletionObservation.from_manifest(manifest) == observation


def test_most_impactful_rule_ties_go_to_the_first() -> None:
    job = finished_job(
        rules_spec(
            rule("DeleteWorkers"), rule("DeleteCluster", 5), rule("DeleteCluster", 7), rule("DeleteNone")
        )
    )
    rules = job.spec.deletion_strategy.deletion_rules  # type: ignore[union-attr]
    chosen = most_impactful_rule(rules)
    assert chosen.policy == P.DELETE_CLUSTER
    assert chosen.condition.ttl_seconds == 5


@pytest.mark.parametrize("policy", ["DeleteCluster", "DeleteWorkers", "DeleteSelf"])
@pytest.mark.parametrize(("job_status", "deployment"), [("SUCCEEDED", "Complete"), ("FAILED", "Failed")])
def test_single_rule_with_ttl_0_runs_at_end_time(policy: str, job_status: str, deployment: str) -> None:
    job = finished_job(rules_spec(rule(policy, 0, job_status)), job_status=job_status, deployment=deployment)
    assert next_deletion_step(job, END, NOTHING_DONE, CONFIG) == DeletionStep(action=P(policy))
    # Once its aim holds, nothing is left.
    assert next_deletion_step(job, at(1), {P(policy): True}, CONFIG).done


def test_single_delete_none_rule_does_nothing() -> None:
    job = finished_job(rules_spec(rule("DeleteNone")))
    assert next_deletion_step(job, END, NOTHING_DONE, CONFIG).done


def test_rule_waits_until_exactly_end_time_plus_ttl() -> None:
    job = finished_job(rules_spec(rule("DeleteCluster", 10)))
    assert next_deletion_step(job, at(9.999), NOTHING_DONE, CONFIG) == DeletionStep(wake_at=at(10))
    assert next_deletion_step(job, at(10), NOTHING_DONE, CONFIG) == DeletionStep(action=P.DELETE_CLUSTER)


def test_rules_match_their_condition_only() -> None:
    spec = rules_spec(
        rule("DeleteWorkers", 0, "SUCCEEDED"),
        rule("DeleteSelf", 0, "FAILED"),
        rule("DeleteCluster", 5, None, "Failed"),
    )
    succeeded = finished_job(spec)
    assert next_deletion_step(succeeded, END, NOTHING_DONE, CONFIG) == DeletionStep(action=P.DELETE_WORKERS)
    # A deadline failure: deployment Failed, Ray job not FAILED -> only the deployment-status rule matches.
    deadline = finished_job(spec, job_status="RUNNING", deployment="Failed")
    assert next_deletion_step(deadline, END, NOTHING_DONE, CONFIG) == DeletionStep(wake_at=at(5))
    assert next_deletion_step(deadline, at(5), NOTHING_DONE, CONFIG) == DeletionStep(action=P.DELETE_CLUSTER)


def test_all_rules_overdue_runs_delete_self_directly() -> None:
    job = finished_job(rules_spec(rule("DeleteWorkers"), rule("DeleteCluster"), rule("DeleteSelf")))
    assert next_deletion_step(job, END, NOTHING_DONE, CONFIG) == DeletionStep(action=P.DELETE_SELF)


def test_staged_rules_run_workers_then_cluster_then_self() -> None:
    job = finished_job(rules_spec(rule("DeleteWorkers", 0), rule("DeleteCluster", 5), rule("DeleteSelf", 10)))
    cluster = RUNNING_CLUSTER
    actions: list[tuple[datetime, DeletionPolicyType]] = []
    now = END
    for _ in range(10):
        step = next_deletion_step(job, now, deletion_completions(cluster), CONFIG)
        if step.action is not None:
            actions.append((now, step.action))
            if step.action == P.DELETE_SELF:
                break  # the workflow ends with DeleteSelf
            cluster = WORKERS_SUSPENDED if step.action == P.DELETE_WORKERS else DELETING
        elif step.wake_at is not None:
            now = step.wake_at  # the durable timer fires exactly then
        else:
            break
    assert actions == [(at(0), P.DELETE_WORKERS), (at(5), P.DELETE_CLUSTER), (at(10), P.DELETE_SELF)]


def test_catch_up_after_downtime_runs_only_the_most_impactful() -> None:
    job = finished_job(rules_spec(rule("DeleteWorkers", 0), rule("DeleteCluster", 5), rule("DeleteSelf", 10)))
    # Worker down from 0 s to 7 s: Workers and Cluster are overdue -> only DeleteCluster, then wait for Self.
    assert next_deletion_step(job, at(7), deletion_completions(RUNNING_CLUSTER), CONFIG) == DeletionStep(
        action=P.DELETE_CLUSTER, wake_at=at(10)
    )
    # Deleting the cluster completes DeleteWorkers too.
    assert next_deletion_step(job, at(7), deletion_completions(DELETING), CONFIG) == DeletionStep(
        wake_at=at(10)
    )
    # Down past every due time: straight to DeleteSelf.
    assert next_deletion_step(job, at(60), deletion_completions(RUNNING_CLUSTER), CONFIG) == DeletionStep(
        action=P.DELETE_SELF
    )


def test_rules_need_an_end_time() -> None:
    with pytest.raises(ValueError, match="endTime"):
        next_deletion_step(finished_job(rules_spec(rule("DeleteSelf")), end=None), END, NOTHING_DONE, CONFIG)


# ---- legacy onSuccess / onFailure -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("job_status", "deployment", "action"),
    [
        ("SUCCEEDED", "Complete", P.DELETE_CLUSTER),
        ("FAILED", "Failed", P.DELETE_WORKERS),
        ("STOPPED", "Complete", None),  # STOPPED takes no legacy action
        ("RUNNING", "Failed", None),  # a deployment failure before the Ray job finished: no action
        ("", "Failed", None),
    ],
)
def test_legacy_policy_by_job_status(
    job_status: str, deployment: str, action: DeletionPolicyType | None
) -> None:
    job = finished_job(legacy_spec("DeleteCluster", "DeleteWorkers", ttl=10), job_status, deployment)
    early = next_deletion_step(job, at(3), NOTHING_DONE, CONFIG)
    due = next_deletion_step(job, at(10), NOTHING_DONE, CONFIG)
    if action is None:
        assert early.done
        assert due.done
    else:
        assert early == DeletionStep(wake_at=at(10))
        assert due == DeletionStep(action=action)
        assert next_deletion_step(job, at(10), {action: True}, CONFIG).done


@pytest.mark.parametrize(("job_status", "deployment"), [("SUCCEEDED", "Complete"), ("FAILED", "Failed")])
def test_legacy_delete_none_and_delete_self(job_status: str, deployment: str) -> None:
    keep = finished_job(legacy_spec("DeleteNone", "DeleteNone"), job_status, deployment)
    assert next_deletion_step(keep, at(0), NOTHING_DONE, CONFIG).done
    remove = finished_job(legacy_spec("DeleteSelf", "DeleteSelf"), job_status, deployment)
    assert next_deletion_step(remove, at(0), NOTHING_DONE, CONFIG) == DeletionStep(action=P.DELETE_SELF)


def test_legacy_delete_workers_on_a_vanished_cluster_is_done() -> None:
    job = finished_job(legacy_spec("DeleteWorkers", "DeleteNone"))
    assert next_deletion_step(job, at(0), deletion_completions(GONE), CONFIG).done


# ---- shutdownAfterJobFinishes ---------------------------------------------------------------------


@pytest.mark.parametrize(("delete_rayjob", "action"), [(False, P.DELETE_CLUSTER), (True, P.DELETE_SELF)])
@pytest.mark.parametrize(
    ("job_status", "deployment"), [("SUCCEEDED", "Complete"), ("FAILED", "Failed"), ("RUNNING", "Failed")]
)
def test_shutdown_after_job_finishes(
    delete_rayjob: bool, action: DeletionPolicyType, job_status: str, deployment: str
) -> None:
    config = OperatorConfig(delete_rayjob_after_job_finishes=delete_rayjob)
    job = finished_job(
        {"shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 30}, job_status, deployment
    )
    assert next_deletion_step(job, at(29), NOTHING_DONE, config) == DeletionStep(wake_at=at(30))
    assert next_deletion_step(job, at(30), NOTHING_DONE, config) == DeletionStep(action=action)
    if action == P.DELETE_CLUSTER:
        assert next_deletion_step(job, at(31), deletion_completions(DELETING), config).done
