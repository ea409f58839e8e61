"""Looking up a workflow's runs and waiting on a worker, for the commands and the controller."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from temporalio.client import WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from models.naming import MEMO_OUTCOME, ObjectRef
from raypilot.runs.errors import CommandError

# How long a command waits for a worker to answer an update or query before it gives up: a worker that is not
# running would otherwise leave the command waiting forever.
WORKER_PATIENCE_SECONDS = 60.0

T = TypeVar("T")


def describe_ref(ref: ObjectRef) -> str:
    """ "rayjob default/x": how messages name the object."""
    return f"{ref.kind.lower()} {ref.namespace}/{ref.name}"


async def with_worker_patience(call: Awaitable[T], what: str, task_queue: str) -> T:
    """`call`, or a failure naming the likely cause when no worker answers in time."""
    try:
        return await asyncio.wait_for(call, WORKER_PATIENCE_SECONDS)
    except TimeoutError:
        raise CommandError(
            f"{what}: no worker answered within {WORKER_PATIENCE_SECONDS:.0f} s; "
            f"is `raypilot worker` running on task queue {task_queue!r}?"
        ) from None


def is_not_found(error: BaseException) -> bool:
    return isinstance(error, RPCError) and error.status == RPCStatusCode.NOT_FOUND


async def latest_run(handle: WorkflowHandle[Any, Any]) -> WorkflowExecutionDescription | None:
    """The workflow's latest run, or None when there is none."""
    try:
        return await handle.describe()
    except RPCError as error:
        if is_not_found(error):
            return None
        raise


async def workflow_state(handle: WorkflowHandle[Any, Any]) -> WorkflowExecutionStatus | None:
    """The status of the workflow's latest run, or None when there never was one."""
    description = await latest_run(handle)
    return description.status if description is not None else None


async def latest_outcome(description: WorkflowExecutionDescription) -> str | None:
    """What a completed RayJob run recorded in its memo: `finished` or `deleted` (None: no record)."""
    outcome = (await description.memo()).get(MEMO_OUTCOME)
    return outcome if isinstance(outcome, str) else None


def application_cause(error: BaseException) -> ApplicationError | None:
    """The ApplicationError at the root of an update or workflow failure, if there is one."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ApplicationError):
            return cause
        cause = cause.__cause__ or getattr(cause, "cause", None)
    return None
