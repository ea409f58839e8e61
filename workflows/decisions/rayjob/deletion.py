"""What a finished RayJob deletes, and when: deletionRules, the legacy onSuccess/onFailure policies and
shutdownAfterJobFinishes.

KubeRay functions (rayjob_controller.go): the `Complete, Failed` branch of `Reconcile`, `handleDeletionRules`,
`isDeletionRuleMatched`, `selectMostImpactfulRule`, `isDeletionActionCompleted`, `handleLegacyDeletionPolicy`,
`handleShutdownAfterJobFinishes` and `suspendWorkerGroups`.

The workflow calls `next_deletion_step` in a loop: run `action` if there is one (then call again), else sleep
until `wake_at` with a durable timer, else stop (`done`). After a DeleteSelf action the workflow ends.

Where raypilot differs:
- Exact due times: an action is due at `status.endTime + TTL`; KubeRay requeues 2 s late (`requeueDelayFor`).
- The legacy and shutdown paths consult the completion check too, so a cluster that is already gone is not
  deleted again and DeleteWorkers on a vanished cluster is simply done (KubeRay would requeue on NotFound).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from models.operator import OperatorConfig
from models.rayjob import (
    DeletionPolicyType,
    DeletionRule,
    JobStatus,
    RayJob,
    is_job_deployment_terminal,
)

__all__ = [
    "IMPACT",
    "ClusterDeletionObservation",
    "DeletionMechanism",
    "DeletionStep",
    "deletion_completions",
    "deletion_mechanism",
    "is_deletion_action_completed",
    "is_deletion_rule_matched",
    "most_impactful_rule",
    "next_deletion_step",
]

# How much each policy removes; the most impactful overdue rule wins.
IMPACT: Mapping[DeletionPolicyType, int] = {
    DeletionPolicyType.DELETE_SELF: 4,
    DeletionPolicyType.DELETE_CLUSTER: 3,
    DeletionPolicyType.DELETE_WORKERS: 2,
    DeletionPolicyType.DELETE_NONE: 1,
}


class DeletionMechanism(StrEnum):
    """Which of KubeRay's deletion mechanisms governs a finished RayJob (first match wins)."""

    CLUSTER_SELECTOR = "ClusterSelector"  # never touch a cluster the RayJob did not create
    DELETION_RULES = "DeletionRules"
    LEGACY_POLICY = "LegacyPolicy"  # deletionStrategy.onSuccess / onFailure
    SHUTDOWN_AFTER_JOB_FINISHES = "ShutdownAfterJobFinishes"
    NONE = "None"


def deletion_mechanism(job: RayJob, config: OperatorConfig) -> DeletionMechanism:
    """clusterSelector -> nothing; deletionStrategy (gate RayJobDeletionPolicy on): rules, else legacy;
    else shutdownAfterJobFinishes; else nothing."""
    spec = job.spec
    if spec.cluster_selector:
        return DeletionMechanism.CLUSTER_SELECTOR
    if config.feature_gates.ray_job_deletion_policy and spec.deletion_strategy is not None:
        if spec.deletion_strategy.deletion_rules:
            return DeletionMechanism.DELETION_RULES
        return DeletionMechanism.LEGACY_POLICY
    if spec.shutdown_after_job_finishes:
        return DeletionMechanism.SHUTDOWN_AFTER_JOB_FINISHES
    return DeletionMechanism.NONE


@dataclass(frozen=True)
class ClusterDeletionObservation:
    """The RayJob's RayCluster as far as deletion cares."""

    exists: bool
    deleting: bool = False
    all_worker_groups_suspended: bool = False

    @classmethod
    def from_manifest(cls, cluster: Mapping[str, Any] | None) -> ClusterDeletionObservation:
        """From the RayCluster's JSON, None when it is not found."""
        if cluster is None:
            return cls(exists=False)
        groups = (cluster.get("spec") or {}).get("workerGroupSpecs") or []
        return cls(
            exists=True,
            deleting=bool((cluster.get("metadata") or {}).get("deletionTimestamp")),
            all_worker_groups_suspended=all(group.get("suspend") is True for group in groups),
        )


def is_deletion_action_completed(policy: DeletionPolicyType, cluster: ClusterDeletionObservation) -> bool:
    """Whether the state a policy aims at holds already: DeleteWorkers <- cluster gone, going, or every worker
    group suspended; DeleteCluster <- cluster gone or going; DeleteSelf never (the RayJob still exists
    while we ask); DeleteNone always."""
    gone = not cluster.exists or cluster.deleting
    if policy == DeletionPolicyType.DELETE_WORKERS:
        return gone or cluster.all_worker_groups_suspended
    if policy == DeletionPolicyType.DELETE_CLUSTER:
        return gone
    return policy == DeletionPolicyType.DELETE_NONE


def deletion_completions(cluster: ClusterDeletionObservation) -> dict[DeletionPolicyType, bool]:
    """`is_deletion_action_completed` for every policy: the `completed` argument of `next_deletion_step`."""
    return {policy: is_deletion_action_completed(policy, cluster) for policy in DeletionPolicyType}


def is_deletion_rule_matched(rule: DeletionRule, job: RayJob) -> bool:
    """A rule matches on jobStatus when it names one, else on jobDeploymentStatus."""
    condition = rule.condition
    if condition.job_status is not None:
        return condition.job_status == job.status.job_status
    return condition.job_deployment_status == job.status.job_deployment_status


def most_impactful_rule(rules: Sequence[DeletionRule]) -> DeletionRule:
    """DeleteSelf > DeleteCluster > DeleteWorkers > DeleteNone; the first one on a tie."""
    chosen = rules[0]
    for rule in rules[1:]:
        if IMPACT[rule.policy] > IMPACT[chosen.policy]:
            chosen = rule
    return chosen


@dataclass(frozen=True)
class DeletionStep:
    """Run `action` now (if any), then ask again; otherwise wake at `wake_at`; `done` when nothing remains."""

    action: DeletionPolicyType | None = None
    wake_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.action is None and self.wake_at is None


_DONE = DeletionStep()


def _completed(completed: Mapping[DeletionPolicyType, bool], policy: DeletionPolicyType) -> bool:
    return policy == DeletionPolicyType.DELETE_NONE or completed.get(policy, False)


def _rules_step(
    job: RayJob, end: datetime, now: datetime, completed: Mapping[DeletionPolicyType, bool]
) -> DeletionStep:
    strategy = job.spec.deletion_strategy
    rules = strategy.deletion_rules if strategy is not None else []
    overdue: list[DeletionRule] = []
    wake_at: datetime | None = None
    for rule in rules:
        if not is_deletion_rule_matched(rule, job):
            continue
        due = end + timedelta(seconds=rule.condition.ttl_seconds)
        if now < due:
            wake_at = due if wake_at is None else min(wake_at, due)
        elif not _completed(completed, rule.policy):
            overdue.append(rule)
    # After downtime several rules may be overdue: only the most impactful runs, the others are then done too.
    action = most_impactful_rule(overdue).policy if overdue else None
    return DeletionStep(action=action, wake_at=wake_at)


def _single_policy_step(
    policy: DeletionPolicyType, due: datetime, now: datetime, completed: Mapping[DeletionPolicyType, bool]
) -> DeletionStep:
    if now < due:
        return DeletionStep(wake_at=due)
    return _DONE if _completed(completed, policy) else DeletionStep(action=policy)


def _legacy_policy(job: RayJob) -> DeletionPolicyType | None:
    strategy = job.spec.deletion_strategy
    if strategy is None:
        return None
    # STOPPED, or a deployment failure before the Ray job finished (e.g. a deadline): no legacy action.
    chosen = {JobStatus.SUCCEEDED: strategy.on_success, JobStatus.FAILED: strategy.on_failure}.get(
        job.status.job_status
    )
    return chosen.policy if chosen is not None else None


def next_deletion_step(
    job: RayJob, now: datetime, completed: Mapping[DeletionPolicyType, bool], config: OperatorConfig
) -> DeletionStep:
    """The next deletion step of a RayJob in Complete or Failed (anything else: done).

    `completed` maps each policy to whether its aim already holds (`deletion_completions`); DeleteNone always
    counts as completed. Every TTL counts from status.endTime.
    """
    status = job.status
    if not is_job_deployment_terminal(status.job_deployment_status):
        return _DONE
    mechanism = deletion_mechanism(job, config)
    if mechanism in (DeletionMechanism.CLUSTER_SELECTOR, DeletionMechanism.NONE):
        return _DONE
    end = status.end_time
    if end is None:
        raise ValueError("a finished RayJob must have status.endTime to time its deletion")
    if mechanism == DeletionMechanism.DELETION_RULES:
        return _rules_step(job, end, now, completed)
    ttl_due = end + timedelta(seconds=job.spec.ttl_seconds_after_finished)
    if mechanism == DeletionMechanism.LEGACY_POLICY:
        policy = _legacy_policy(job)
        if policy is None or policy == DeletionPolicyType.DELETE_NONE:
            return _DONE
        return _single_policy_step(policy, ttl_due, now, completed)
    # shutdownAfterJobFinishes deletes only the cluster (the submitter Job keeps the driver logs), or the
    # RayJob itself when DELETE_RAYJOB_CR_AFTER_JOB_FINISHES is true.
    policy = (
        DeletionPolicyType.DELETE_SELF
        if config.delete_rayjob_after_job_finishes
        else DeletionPolicyType.DELETE_CLUSTER
    )
    return _single_policy_step(policy, ttl_due, now, completed)
