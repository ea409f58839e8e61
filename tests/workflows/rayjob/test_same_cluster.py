"""Same-cluster retries at workflow level: an InteractiveMode (or K8sJobMode) RayJob whose retry policy asks
for `sameCluster` fails its run at once with the reason, creating nothing (a run started with the `temporal`
CLI skips raypilot apply's check, so this is that door); in HTTPMode the same policy is accepted (its retries
on the same RayCluster: tests/workflows/rayjob/test_retry_policy.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import rayjob_manifest, status_of
from raypilot.testing.rayjob_world import FakeWorld
from workflows.decisions.rayjob.retry_policy import RETRY_POLICY_ANNOTATION
from workflows.rayjob.workflow import RayJobWorkflow

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
POLICY = {"classes": {"SupervisorStart": {"sameCluster": True}}}


@pytest.mark.parametrize(
    ("mode", "because"),
    [
        ("InteractiveMode", "raypilot has no job of its own to submit again"),
        ("K8sJobMode", "submitter Kubernetes Job runs once per RayCluster"),
    ],
)
async def test_same_cluster_retries_outside_http_mode_fail_the_run_creating_nothing(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, mode: str, because: str
) -> None:
    # No backoffLimit: KubeRay rejects one with InteractiveMode before any annotation is looked at.
    manifest = rayjob_manifest(mode=mode)
    manifest["metadata"]["annotations"] = {RETRY_POLICY_ANNOTATION: json.dumps(POLICY)}
    world = FakeWorld()
    client = time_skipping_env.client
    async with fake_worker(client, activities=world.activities()) as queue:
        handle = await client.start_workflow(
            RayJobWorkflow.run, manifest, id=f"rayjob/default/same-{mode.lower()}", task_queue=queue
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        status = await status_of(handle)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.non_retryable) == ("ValidationFailed", True)
    assert cause.message.startswith(f"metadata.annotations[{RETRY_POLICY_ANNOTATION}]: sameCluster: ")
    assert because in cause.message
    assert (status["jobDeploymentStatus"], status["message"]) == ("ValidationFailed", cause.message)
    assert world.calls == []
    assert world.events == []
