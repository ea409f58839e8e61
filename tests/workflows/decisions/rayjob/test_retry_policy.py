"""Retries that fit the failure: classification by Ray's error_type and the RayJob's reason, the
`raypilot.io/retry-policy` annotation (validated with a message naming the field), back-off tables, the
plan for a failed attempt, and the attempt number in the runtime_env."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.rayjob import RayJob, RayJobStatus
from tests.workflows.decisions.rayjob.rayjobs import rayjob
from workflows.decisions.rayjob.annotations import raypilot_annotation_problem
from workflows.decisions.rayjob.attempts import (
    ATTEMPT_ENV,
    attempt_condition,
    status_for_retry_on_same_cluster,
    with_attempt_env,
)
from workflows.decisions.rayjob.retry import settle_transition
from workflows.decisions.rayjob.retry_policy import (
    RETRY_POLICY_ANNOTATION,
    Backoff,
    FailureClass,
    RetryPlan,
    backoff_delay,
    classify_failure,
    parse_retry_policy,
    plan_retry,
)
from workflows.decisions.rayjob.running import HEAD_POD_NOT_FOUND_MESSAGE

F = FailureClass
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def failed(reason: str, job_status: str = "FAILED", message: str = "", count: int = 1) -> RayJobStatus:
    return RayJobStatus.model_validate(
        {
            "jobDeploymentStatus": "Failed",
            "reason": reason,
            "jobStatus": job_status,
            "message": message,
            "failed": count,
        }
    )


@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (failed("AppFailed"), "JOB_ENTRYPOINT_COMMAND_ERROR", F.APPLICATION),
        (failed("AppFailed"), "JOB_ENTRYPOINT_COMMAND_START_ERROR", F.APPLICATION),
        (failed("AppFailed"), "", F.APPLICATION),
        (failed("AppFailed"), "RUNTIME_ENV_SETUP_FAILURE", F.RUNTIME_ENV_SETUP),
        (failed("AppFailed"), "JOB_SUPERVISOR_ACTOR_START_TIMEOUT", F.SUPERVISOR_START),
        (failed("AppFailed"), "JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE", F.SUPERVISOR_START),
        (failed("AppFailed"), "JOB_SUPERVISOR_ACTOR_DIED", F.NODE_DIED),
        (failed("AppFailed", "RUNNING", HEAD_POD_NOT_FOUND_MESSAGE), "", F.NODE_DIED),
        (failed("JobStatusCheckTimeoutExceeded", "RUNNING"), "", F.NODE_DIED),
        # The submitter's exit: it failed while the Ray job had not.
        (failed("SubmissionFailed", "PENDING"), "", F.SUBMISSION),
        # Deadlines win over whatever the Ray job reported.
        (failed("DeadlineExceeded", "RUNNING"), "", F.DEADLINE),
        (failed("PreRunningDeadlineExceeded", ""), "", F.DEADLINE),
        (failed("DeadlineExceeded"), "JOB_ENTRYPOINT_COMMAND_ERROR", F.DEADLINE),
        (failed("JobDeploymentStatusTransitionGracePeriodExceeded", "RUNNING"), "", F.OTHER),
    ],
)
def test_classify_failure(status: RayJobStatus, error_type: str, expected: FailureClass) -> None:
    assert classify_failure(status, error_type) == expected


def job_with(policy: Any, mode: str = "HTTPMode", **spec: Any) -> RayJob:
    text = policy if isinstance(policy, str) else json.dumps(policy)
    submission = {"submissionMode": mode, "entrypoint": "python main.py"}
    return rayjob({**submission, **spec}, annotations={RETRY_POLICY_ANNOTATION: text})


YAML_POLICY = """
default: {retry: true}
classes:
  Application: {retry: false}
  RuntimeEnvSetup: {backoff: {initial: 10s, factor: 3, max: 1m}}
  SupervisorStart: {sameCluster: true}
"""


def test_a_yaml_policy_parses() -> None:
    policy = parse_retry_policy(job_with(YAML_POLICY))
    assert policy is not None
    assert policy.for_class(F.APPLICATION).retry is False
    assert policy.for_class(F.RUNTIME_ENV_SETUP).backoff == Backoff(
        initial=timedelta(seconds=10), factor=3, max=timedelta(minutes=1)
    )
    assert policy.for_class(F.SUPERVISOR_START).same_cluster is True
    assert policy.for_class(F.NODE_DIED).retry is True  # default


@pytest.mark.parametrize(
    ("policy", "mode", "field"),
    [
        ("[1, 2", "HTTPMode", "not YAML or JSON"),
        ("- a list", "HTTPMode", "must be a mapping"),
        ({"classes": {"Application": {"retry": "sometimes"}}}, "HTTPMode", "classes.Application.retry"),
        ({"classes": {"Typo": {"retry": False}}}, "HTTPMode", "classes.Typo"),
        ({"classes": {"Typo": {"retry": False}}}, "HTTPMode", "RuntimeEnvSetup"),  # lists the classes
        ({"default": {"backoff": {"initial": "10"}}}, "HTTPMode", "default.backoff.initial"),
        ({"default": {"backoff": {"factor": 0.5}}}, "HTTPMode", "default.backoff.factor"),
        ({"default": {"retries": 3}}, "HTTPMode", "default.retries"),
        ({"default": {"sameCluster": True}}, "K8sJobMode", "sameCluster"),
    ],
)
def test_a_bad_policy_names_the_annotation_and_the_field(policy: Any, mode: str, field: str) -> None:
    problem = raypilot_annotation_problem(job_with(policy, mode))
    assert problem is not None
    assert RETRY_POLICY_ANNOTATION in problem
    assert field in problem


def test_same_cluster_is_refused_with_a_cluster_selector() -> None:
    job = job_with({"default": {"sameCluster": True}}, clusterSelector={"ray.io/cluster": "shared"})
    problem = raypilot_annotation_problem(job)
    assert problem is not None
    assert "clusterSelector" in problem


@pytest.mark.parametrize(
    ("backoff", "retry_number", "delay"),
    [
        (Backoff(), 1, 0),
        (Backoff(initial=timedelta(seconds=10)), 1, 10),
        (Backoff(initial=timedelta(seconds=10)), 2, 20),
        (Backoff(initial=timedelta(seconds=10)), 4, 80),
        (Backoff(initial=timedelta(seconds=10), factor=3, max=timedelta(minutes=1)), 2, 30),
        (Backoff(initial=timedelta(seconds=10), factor=3, max=timedelta(minutes=1)), 3, 60),
        (Backoff(initial=timedelta(seconds=10), factor=1), 5, 10),
    ],
)
def test_backoff_delay(backoff: Backoff, retry_number: int, delay: int) -> None:
    assert backoff_delay(backoff, retry_number) == timedelta(seconds=delay)


@pytest.mark.parametrize(
    ("status", "error_type", "plan"),
    [
        (failed("AppFailed"), "JOB_ENTRYPOINT_COMMAND_ERROR", RetryPlan(F.APPLICATION, retry=False)),
        (
            failed("AppFailed", count=2),
            "RUNTIME_ENV_SETUP_FAILURE",
            RetryPlan(F.RUNTIME_ENV_SETUP, True, timedelta(seconds=30)),
        ),
        (
            failed("AppFailed"),
            "JOB_SUPERVISOR_ACTOR_START_FAILURE",
            RetryPlan(F.SUPERVISOR_START, True, same_cluster=True),
        ),
        # Not listed: `default` (retry: true) even for a deadline KubeRay would never retry.
        (failed("DeadlineExceeded", "RUNNING"), "", RetryPlan(F.DEADLINE, True)),
    ],
)
def test_plan_retry(status: RayJobStatus, error_type: str, plan: RetryPlan) -> None:
    policy = parse_retry_policy(job_with(YAML_POLICY))
    assert policy is not None
    assert plan_retry(policy, status, error_type) == plan


def test_without_default_an_unlisted_class_follows_kuberay() -> None:
    policy = parse_retry_policy(job_with({"classes": {"Application": {"retry": False}}}))
    assert policy is not None
    assert plan_retry(policy, failed("DeadlineExceeded", "RUNNING"), "").retry is False
    assert plan_retry(policy, failed("SubmissionFailed", "PENDING"), "").retry is True


def test_the_verdict_replaces_kubernetes_reason_rule_but_not_backoff_limit() -> None:
    job = job_with(YAML_POLICY, backoffLimit=1)
    running = RayJobStatus.model_validate({"jobDeploymentStatus": "Running"})
    deadline = running.model_copy(update={"job_deployment_status": "Failed", "reason": "DeadlineExceeded"})
    assert settle_transition(job.spec, running, deadline, NOW).job_deployment_status == "Failed"
    assert settle_transition(job.spec, running, deadline, NOW, True).job_deployment_status == "Retrying"
    app_failed = running.model_copy(update={"job_deployment_status": "Failed", "reason": "AppFailed"})
    assert settle_transition(job.spec, running, app_failed, NOW, False).job_deployment_status == "Failed"
    spent = app_failed.model_copy(update={"failed": 1})
    assert settle_transition(job.spec, running, spent, NOW, True).job_deployment_status == "Failed"


@pytest.mark.parametrize(
    ("runtime_env", "expected"),
    [
        ("", {"env_vars": {ATTEMPT_ENV: "3"}}),
        ("pip: [requests]\n", {"pip": ["requests"], "env_vars": {ATTEMPT_ENV: "3"}}),
        ("env_vars: {A: b}\n", {"env_vars": {"A": "b", ATTEMPT_ENV: "3"}}),
    ],
)
def test_the_attempt_number_reaches_the_runtime_env(runtime_env: str, expected: dict[str, Any]) -> None:
    job = job_with(YAML_POLICY, runtimeEnvYAML=runtime_env)
    assert json.loads(with_attempt_env(job, 3).spec.runtime_env_yaml) == expected


def test_a_retry_on_the_same_cluster_keeps_the_cluster_and_submits_a_new_job() -> None:
    job = job_with(YAML_POLICY).model_copy(
        update={
            "status": RayJobStatus.model_validate(
                {
                    "jobDeploymentStatus": "Retrying",
                    "jobId": "rj-aaaaa",
                    "jobStatus": "FAILED",
                    "reason": "AppFailed",
                    "rayClusterName": "rj-ccccc",
                    "dashboardURL": "rj-head-svc.default.svc.cluster.local:8265",
                    "failed": 1,
                }
            )
        }
    )
    status = status_for_retry_on_same_cluster(job, 2, NOW, random.Random(1))
    assert status.job_deployment_status == "Running"
    assert (status.ray_cluster_name, status.dashboard_url, status.failed) == (
        "rj-ccccc",
        "rj-head-svc.default.svc.cluster.local:8265",
        1,
    )
    assert status.job_id.startswith("rj-")
    assert status.job_id != "rj-aaaaa"
    assert (status.job_status, status.reason, status.start_time) == ("", None, NOW)
    with_id = job.model_copy(update={"spec": job.spec.model_copy(update={"job_id": "mine"})})
    assert status_for_retry_on_same_cluster(with_id, 2, NOW, random.Random(1)).job_id == "mine-2"


def test_the_attempt_condition_says_what_became_of_the_previous_attempt() -> None:
    first = attempt_condition(1, None, NOW)
    assert (first.reason, first.message) == ("FirstAttempt", "attempt 1")
    retried = attempt_condition(1, RetryPlan(F.RUNTIME_ENV_SETUP, True, timedelta(seconds=10)), NOW)
    assert retried.reason == "RuntimeEnvSetupRetried"
    assert retried.message == (
        "attempt 2: attempt 1 failed (RuntimeEnvSetup); retried on a new RayCluster after 10s"
    )
    refused = attempt_condition(2, RetryPlan(F.APPLICATION, False), NOW)
    assert (refused.status, refused.reason) == ("False", "ApplicationNotRetried")
