"""No silent leaks (kuberay#5184): a finished RayJob whose deletion policy matches none of its final state.

KubeRay's deletionRules (and the legacy onSuccess/onFailure policy) match on the Ray job's final jobStatus, or
on jobDeploymentStatus. A RayJob failed by `activeDeadlineSeconds` ends `Failed` with its jobStatus still
`RUNNING`: a rule set written for SUCCEEDED and FAILED then matches nothing, and KubeRay keeps the RayCluster
for ever without a word. raypilot says so (a Warning Event and the `RayClusterLeftBehind` condition naming the
cluster) and, when the RayJob carries `raypilot.io/cleanup-after: <duration>` (a Go duration such as `30m`),
deletes the cluster anyway that long after endTime, on a durable timer.

A RayJob without a deletion policy (no deletionStrategy, no shutdownAfterJobFinishes) keeps its cluster on
purpose, as does a matching DeleteNone or DeleteWorkers rule, and a clusterSelector RayJob never owned one:
none of these is a leak.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from models.formats import parse_go_duration_seconds
from models.meta import Condition, ConditionStatus
from models.operator import OperatorConfig
from models.rayjob import DeletionPolicyType, JobStatus, RayJob, is_job_deployment_terminal
from workflows.decisions.rayjob.deletion import (
    DeletionMechanism,
    DeletionStep,
    deletion_mechanism,
    is_deletion_rule_matched,
    next_deletion_step,
)

__all__ = [
    "CLEANUP_AFTER_ANNOTATION",
    "LEFT_BEHIND_CONDITION",
    "LeftBehind",
    "cleanup_after",
    "cleanup_after_problem",
    "cluster_left_behind",
    "left_behind_condition",
    "next_finished_step",
]

CLEANUP_AFTER_ANNOTATION: Final = "raypilot.io/cleanup-after"
LEFT_BEHIND_CONDITION: Final = "RayClusterLeftBehind"
REASON_NO_POLICY_MATCHED: Final = "NoDeletionPolicyMatched"
REASON_CLEANED_UP: Final = "CleanedUpAfterDelay"


@dataclass(frozen=True)
class LeftBehind:
    """The RayCluster a finished RayJob's deletion policy will never delete, and why."""

    cluster_name: str
    why: str
    # endTime + raypilot.io/cleanup-after; None without the annotation (the cluster stays for good).
    cleanup_at: datetime | None

    def message(self, namespace: str) -> str:
        what = f"RayCluster {namespace}/{self.cluster_name} stays: {self.why}"
        if self.cleanup_at is None:
            return f"{what}; set {CLEANUP_AFTER_ANNOTATION} to delete it after a delay"
        return f"{what}; {CLEANUP_AFTER_ANNOTATION} deletes it at {self.cleanup_at.isoformat()}"


def cleanup_after_problem(job: RayJob) -> str | None:
    """Why the `raypilot.io/cleanup-after` annotation is unusable (None when absent or valid)."""
    text = job.metadata.annotations.get(CLEANUP_AFTER_ANNOTATION)
    if text is None:
        return None
    try:
        seconds = parse_go_duration_seconds(text.strip())
    except ValueError as error:
        return f"metadata.annotations[{CLEANUP_AFTER_ANNOTATION}]: {error} (a duration such as 30m or 1h)"
    if seconds < 0:
        return f"metadata.annotations[{CLEANUP_AFTER_ANNOTATION}]: must not be negative, got {text!r}"
    return None


def cleanup_after(job: RayJob) -> timedelta | None:
    """The `raypilot.io/cleanup-after` delay, None when absent (or invalid: validation rejects that first)."""
    if cleanup_after_problem(job) is not None:
        return None
    text = job.metadata.annotations.get(CLEANUP_AFTER_ANNOTATION)
    return None if text is None else timedelta(seconds=parse_go_duration_seconds(text.strip()))


def _final_state(job: RayJob) -> str:
    status = job.status
    words = f"jobDeploymentStatus {status.job_deployment_status.value}"
    words += f", jobStatus {status.job_status.value or 'unknown'}"
    return words + (f" ({status.reason.value})" if status.reason else "")


def _unmatched_policy(job: RayJob, mechanism: DeletionMechanism) -> str | None:
    """Why the configured policy deletes nothing for this final state (None when it applies)."""
    strategy = job.spec.deletion_strategy
    if mechanism == DeletionMechanism.DELETION_RULES and strategy is not None:
        if any(is_deletion_rule_matched(rule, job) for rule in strategy.deletion_rules):
            return None
        return f"no deletion rule matches its final state ({_final_state(job)})"
    if mechanism == DeletionMechanism.LEGACY_POLICY and strategy is not None:
        if job.status.job_status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
            return None
        return f"deletionStrategy onSuccess/onFailure does not apply to its final state ({_final_state(job)})"
    return None


def cluster_left_behind(job: RayJob, config: OperatorConfig) -> LeftBehind | None:
    """The RayCluster a finished RayJob leaves behind although it asked for deletion, else None."""
    status = job.status
    if not is_job_deployment_terminal(status.job_deployment_status) or not status.ray_cluster_name:
        return None
    why = _unmatched_policy(job, deletion_mechanism(job, config))
    if why is None:
        return None
    delay = cleanup_after(job)
    cleanup_at = status.end_time + delay if delay is not None and status.end_time is not None else None
    return LeftBehind(status.ray_cluster_name, why, cleanup_at)


def left_behind_condition(
    left: LeftBehind, namespace: str, now: datetime, *, cleaned_up: bool = False
) -> Condition:
    """The status condition naming what stays behind (False once the cleanup deleted it)."""
    if cleaned_up:
        return Condition(
            type=LEFT_BEHIND_CONDITION,
            status=ConditionStatus.FALSE,
            last_transition_time=now,
            reason=REASON_CLEANED_UP,
            message=f"RayCluster {namespace}/{left.cluster_name} deleted after {CLEANUP_AFTER_ANNOTATION}",
        )
    return Condition(
        type=LEFT_BEHIND_CONDITION,
        status=ConditionStatus.TRUE,
        last_transition_time=now,
        reason=REASON_NO_POLICY_MATCHED,
        message=left.message(namespace),
    )


def next_finished_step(
    job: RayJob, now: datetime, completed: Mapping[DeletionPolicyType, bool], config: OperatorConfig
) -> DeletionStep:
    """`next_deletion_step`, then, once it has nothing left and the cluster is left behind with a
    `raypilot.io/cleanup-after` delay: DeleteCluster at endTime + that delay."""
    step = next_deletion_step(job, now, completed, config)
    if not step.done:
        return step
    left = cluster_left_behind(job, config)
    if left is None or left.cleanup_at is None:
        return step
    if now < left.cleanup_at:
        return DeletionStep(wake_at=left.cleanup_at)
    if completed.get(DeletionPolicyType.DELETE_CLUSTER, False):
        return step
    return DeletionStep(action=DeletionPolicyType.DELETE_CLUSTER)
