"""The activities as a real worker runs them for a workflow (Temporal dev server, pydantic data converter,
sync activities on the thread pool): inputs and results survive serialization, a non-retryable error is not
retried, and cancelling a wait ends the activity (the workflow waits for that to complete)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, RetryState
from temporalio.testing import WorkflowEnvironment

from activities.registry import ActivityDependencies, build_activities
from raypilot.testing.worker import running_worker
from tests.activities.conftest import small_raycluster
from wire import names
from wire.kubernetes import CreateObject, ObjectKey, Observation, WaitRayCluster

pytestmark = [pytest.mark.timeout(90), pytest.mark.devserver]

NO_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=100))


@workflow.defn(sandboxed=False)
class ActivityProbe:
    @workflow.run
    async def run(self, namespace: str) -> dict[str, Any]:
        created = await workflow.execute_activity(
            names.CREATE_RAYCLUSTER,
            CreateObject(body=small_raycluster("probe", namespace)),
            result_type=dict,
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=NO_RETRY,
        )
        ready = await workflow.execute_activity(
            names.WAIT_RAYCLUSTER,
            WaitRayCluster(namespace, "probe", until="ready"),
            result_type=Observation,
            start_to_close_timeout=timedelta(seconds=30),
            heartbeat_timeout=timedelta(seconds=3),
            retry_policy=NO_RETRY,
        )
        missing = await workflow.execute_activity(
            names.GET_RAYCLUSTER,
            ObjectKey(namespace, "absent"),
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=NO_RETRY,
        )
        invalid_error: dict[str, Any] = {}
        try:
            await workflow.execute_activity(
                names.CREATE_SERVICE,
                CreateObject(body={"metadata": {"name": "Not_Valid", "namespace": namespace}, "spec": {}}),
                start_to_close_timeout=timedelta(seconds=20),
                retry_policy=NO_RETRY,
            )
        except ActivityError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError):
                invalid_error = {
                    "type": cause.type,
                    "non_retryable": cause.non_retryable,
                    "retry": err.retry_state,
                }
        wait = workflow.start_activity(
            names.WAIT_RAYCLUSTER,
            WaitRayCluster(namespace, "probe", last_view=ready.view),
            result_type=Observation,
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=1),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        await workflow.sleep(timedelta(seconds=1))
        cancel_requested = workflow.now()
        wait.cancel()
        cancelled = False
        try:
            await wait
        except ActivityError as err:
            cancelled = isinstance(err.cause, CancelledError)
        return {
            "uid": created["metadata"]["uid"],
            "ready_state": ready.view["state"],
            "missing": missing,
            "invalid_error": invalid_error,
            "cancelled": cancelled,
            "cancel_seconds": (workflow.now() - cancel_requested).total_seconds(),
        }


async def test_activities_through_a_worker(
    dev_server_env: WorkflowEnvironment, deps: ActivityDependencies, namespace: str
) -> None:
    async with running_worker(
        dev_server_env.client, activities=build_activities(deps), workflows=[ActivityProbe]
    ) as task_queue:
        result = await dev_server_env.client.execute_workflow(
            ActivityProbe.run,
            namespace,
            id=f"probe-{namespace}",
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=80),
        )
    assert result["uid"]
    assert result["ready_state"] == "ready"
    assert result["missing"] is None
    assert result["invalid_error"]["type"] == "KubernetesInvalid"
    assert result["invalid_error"]["non_retryable"] is True
    assert result["invalid_error"]["retry"] == RetryState.NON_RETRYABLE_FAILURE
    assert result["cancelled"] is True
    assert result["cancel_seconds"] < 5
