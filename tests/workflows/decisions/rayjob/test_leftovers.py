"""No silent leaks (kuberay#5184): which finished RayJobs leave their RayCluster behind although they asked
for deletion, the `raypilot.io/cleanup-after` annotation, and the deletion step it adds."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from models.rayjob import DeletionPolicyType, RayJob
from tests.models.kuberay_documents import deletion_rule
from tests.workflows.decisions.rayjob.rayjobs import CONFIG, END, finished_job
from workflows.decisions.rayjob.annotations import raypilot_annotation_problem
from workflows.decisions.rayjob.deletion import DeletionStep
from workflows.decisions.rayjob.leftovers import (
    CLEANUP_AFTER_ANNOTATION,
    LEFT_BEHIND_CONDITION,
    cleanup_after,
    cluster_left_behind,
    left_behind_condition,
    next_finished_step,
)

P = DeletionPolicyType


SUCCESS_AND_FAILURE_RULES = {
    "deletionStrategy": {
        "deletionRules": [
            deletion_rule("DeleteCluster", job_status="SUCCEEDED"),
            deletion_rule("DeleteCluster", job_status="FAILED"),
        ]
    }
}
LEGACY = {
    "shutdownAfterJobFinishes": True,
    "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteCluster"}},
}
DEADLINE = ("RUNNING", "Failed", "DeadlineExceeded")
SUCCEEDED = ("SUCCEEDED", "Complete", None)


def only(policy: str, deployment: str) -> dict[str, Any]:
    return {"deletionStrategy": {"deletionRules": [deletion_rule(policy, deployment=deployment)]}}


APP_FAILED = ("FAILED", "Failed", "AppFailed")


def finished(
    spec: dict[str, Any],
    final: tuple[str, str, str | None] = DEADLINE,
    cleanup: str | None = None,
    cluster: str = "rj-abcde",
) -> RayJob:
    job_status, deployment, reason = final
    annotations = {CLEANUP_AFTER_ANNOTATION: cleanup} if cleanup is not None else None
    return finished_job(spec, job_status, deployment, reason=reason, cluster=cluster, annotations=annotations)


@pytest.mark.parametrize(
    ("spec", "final", "left"),
    [
        # kuberay#5184: the deadline fails the deployment, jobStatus stays RUNNING, no rule matches.
        (SUCCESS_AND_FAILURE_RULES, DEADLINE, True),
        (SUCCESS_AND_FAILURE_RULES, SUCCEEDED, False),
        (SUCCESS_AND_FAILURE_RULES, APP_FAILED, False),
        # A rule on jobDeploymentStatus Failed catches the deadline.
        (only("DeleteCluster", "Failed"), DEADLINE, False),
        # A matching DeleteNone or DeleteWorkers keeps (part of) the cluster on purpose.
        (only("DeleteNone", "Failed"), DEADLINE, False),
        (only("DeleteWorkers", "Failed"), DEADLINE, False),
        # Legacy onSuccess/onFailure: nothing for a Ray job that never finished.
        (LEGACY, DEADLINE, True),
        (LEGACY, SUCCEEDED, False),
        (LEGACY, ("STOPPED", "Failed", "AppFailed"), True),
        # No deletion asked for, or a shutdown that deletes whatever the outcome: no leak.
        ({}, DEADLINE, False),
        ({"shutdownAfterJobFinishes": True}, DEADLINE, False),
        # clusterSelector: the cluster was never the RayJob's.
        ({"clusterSelector": {"ray.io/cluster": "shared"}, **SUCCESS_AND_FAILURE_RULES}, DEADLINE, False),
    ],
)
def test_cluster_left_behind(spec: dict[str, Any], final: tuple[str, str, str | None], left: bool) -> None:
    assert (cluster_left_behind(finished(spec, final), CONFIG) is not None) is left


def test_not_finished_or_without_a_cluster_leaves_nothing() -> None:
    running = finished(SUCCESS_AND_FAILURE_RULES, ("RUNNING", "Running", None))
    assert cluster_left_behind(running, CONFIG) is None
    assert cluster_left_behind(finished(SUCCESS_AND_FAILURE_RULES, cluster=""), CONFIG) is None


def test_the_message_names_the_cluster_the_final_state_and_the_way_out() -> None:
    left = cluster_left_behind(finished(SUCCESS_AND_FAILURE_RULES), CONFIG)
    assert left is not None
    assert left.cleanup_at is None
    message = left.message("team-a")
    assert "RayCluster team-a/rj-abcde stays" in message
    assert "jobDeploymentStatus Failed, jobStatus RUNNING (DeadlineExceeded)" in message
    assert CLEANUP_AFTER_ANNOTATION in message
    condition = left_behind_condition(left, "team-a", END)
    assert (condition.type, condition.status, condition.message) == (LEFT_BEHIND_CONDITION, "True", message)
    cleaned = left_behind_condition(left, "team-a", END, cleaned_up=True)
    assert cleaned.status == "False"


@pytest.mark.parametrize(
    ("text", "delay", "problem"),
    [
        (None, None, None),
        ("30m", timedelta(minutes=30), None),
        ("1h30m", timedelta(minutes=90), None),
        ("0s", timedelta(0), None),
        ("10", None, "missing unit"),
        ("soon", None, "invalid duration"),
        ("-5m", None, "must not be negative"),
    ],
)
def test_cleanup_after_annotation(text: str | None, delay: timedelta | None, problem: str | None) -> None:
    job = finished(SUCCESS_AND_FAILURE_RULES, cleanup=text)
    assert cleanup_after(job) == delay
    found = raypilot_annotation_problem(job)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found
        assert CLEANUP_AFTER_ANNOTATION in found


@pytest.mark.parametrize(
    ("after", "completed", "expected"),
    [
        (timedelta(seconds=0), {}, DeletionStep(wake_at=END + timedelta(minutes=30))),
        (timedelta(minutes=30), {}, DeletionStep(action=P.DELETE_CLUSTER)),
        (timedelta(minutes=31), {}, DeletionStep(action=P.DELETE_CLUSTER)),
        (timedelta(minutes=31), {P.DELETE_CLUSTER: True}, DeletionStep()),
    ],
)
def test_cleanup_after_deletes_the_cluster_left_behind_at_end_time_plus_the_delay(
    after: timedelta, completed: dict[DeletionPolicyType, bool], expected: DeletionStep
) -> None:
    job = finished(SUCCESS_AND_FAILURE_RULES, cleanup="30m")
    assert next_finished_step(job, END + after, completed, CONFIG) == expected


def test_without_a_leak_the_annotation_changes_no_deletion_step() -> None:
    # A matching rule deletes at its own due time; cleanup-after adds nothing.
    job = finished(SUCCESS_AND_FAILURE_RULES, SUCCEEDED, cleanup="30m")
    assert next_finished_step(job, END + timedelta(hours=1), {P.DELETE_CLUSTER: True}, CONFIG).done
    no_policy = finished({}, DEADLINE, cleanup="30m")
    assert next_finished_step(no_policy, END, {}, CONFIG).done
