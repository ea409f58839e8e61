"""A worker for tests: real workflows, and real or fake activities registered under the real names."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Interceptor, Worker, WorkerDeploymentConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from raypilot.workflow_runner import MAX_CONCURRENT_WORKFLOW_TASKS, workflow_runner


@asynccontextmanager
async def running_worker(
    client: Client,
    *,
    activities: Sequence[Callable[..., Any]] = (),
    workflows: Sequence[type] | None = None,
    task_queue: str | None = None,
    replay_every_task: bool = True,
    interceptors: Sequence[Interceptor] = (),
    sandboxed: bool = False,
    deployment: WorkerDeploymentConfig | None = None,
) -> AsyncIterator[str]:
    """Runs a worker until the block ends and yields its task queue (a fresh one unless given).

    `replay_every_task` disables the workflow cache so every workflow task replays the whole history:
    a nondeterministic workflow then fails the test at once instead of in production. The workflows run as
    raypilot/worker.py runs them (raypilot/workflow_runner.py: in the worker's interpreter, no sandbox), so a
    test checks the code as it is installed. `sandboxed` runs them in Temporal's full sandbox instead, which
    also stops a clock, random or I/O call at run time; it re-imports the workflow modules for each run and
    validates each workflow class at the worker's start, which made a RayJob lifecycle on the time-skipping
    server cost the test process 4.1-4.7 s of CPU against 0.12 s without it (measured back to back). That
    check is held by the replay tests of every workflow type's committed histories (sandboxed,
    raypilot/testing/replay.py), the static scan of the workflow packages
    (tests/raypilot/test_workflow_code_determinism.py) and the tests that ask for the sandbox. `deployment`:
    the worker's build, for Worker Versioning (raypilot/versioning.py).
    """
    if workflows is None:
        from workflows.registry import WORKFLOWS

        workflows = WORKFLOWS
    queue = task_queue or f"test-{uuid.uuid4()}"
    with ThreadPoolExecutor(max_workers=16) as executor:
        async with Worker(
            client,
            task_queue=queue,
            workflows=list(workflows),
            workflow_runner=SandboxedWorkflowRunner() if sandboxed else workflow_runner(),
            max_concurrent_workflow_tasks=MAX_CONCURRENT_WORKFLOW_TASKS,
            activities=list(activities),
            activity_executor=executor,
            interceptors=list(interceptors),
            max_cached_workflows=0 if replay_every_task else 1000,
            workflow_failure_exception_types=[workflow.NondeterminismError],
            # As worker.py: cancellation reaches a wait within ~2 s instead of 0.8 x its heartbeat timeout.
            max_heartbeat_throttle_interval=timedelta(seconds=2),
            default_heartbeat_throttle_interval=timedelta(seconds=2),
            deployment_config=deployment,
        ):
            yield queue


def console_env(client: Client, task_queue: str) -> dict[str, str]:
    """The environment of a `raypilot` command run in-process against `client`'s namespace, for the workers
    of `task_queue`; HOME is a directory that does not exist, so no user configuration is read."""
    return {
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "RAYPILOT_TASK_QUEUE": task_queue,
        "HOME": "/nonexistent",
    }
