"""What every Temporal-facing `raypilot` command shares: where it writes, its environment, exit codes, the
client, and turning Temporal errors into the contract's exit statuses (docs/contract.md §6)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO, TypeVar

from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from models.naming import MEMO_OUTCOME, ObjectRef, parse_object_ref, workflow_id
from raypilot.cli.exits import EXIT_FAILURE, EXIT_REJECTED
from raypilot.settings import SettingsError, TemporalSettings, connect, connection_failure
from raypilot.tracing import shutdown_tracing

# How long a command waits for a worker to answer an update or query before it gives up: a worker that is not
# running would otherwise leave the command waiting forever.
WORKER_PATIENCE_SECONDS = 60.0

T = TypeVar("T")


class CommandError(Exception):
    """Ends a command: `message` goes to stderr, `exit_code` is the process's exit status."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def rejected(message: str) -> CommandError:
    return CommandError(message, EXIT_REJECTED)


@dataclass
class Console:
    """The streams and environment a command uses (tests pass their own; the console script uses the
    process's)."""

    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stdin: TextIO = field(default_factory=lambda: sys.stdin)

    def stdin_text(self) -> str:
        return self.stdin.read()

    def out(self, text: str = "") -> None:
        self.stdout.write(text if text.endswith("\n") else text + "\n")
        self.stdout.flush()

    def err(self, text: str) -> None:
        self.stderr.write(text if text.endswith("\n") else text + "\n")
        self.stderr.flush()


def parse_ref(text: str) -> ObjectRef:
    """KIND/NAMESPACE/NAME, or a rejection (exit 2) saying what is wrong with it."""
    try:
        return parse_object_ref(text)
    except ValueError as error:
        raise rejected(str(error)) from None


def describe_ref(ref: ObjectRef) -> str:
    """ "rayjob default/x": how messages name the object."""
    return f"{ref.kind.lower()} {ref.namespace}/{ref.name}"


def ref_id(ref: ObjectRef) -> str:
    return workflow_id(ref.kind, ref.namespace, ref.name)


def settings_from(console: Console) -> TemporalSettings:
    try:
        return TemporalSettings.from_env(console.env)
    except SettingsError as error:
        raise rejected(str(error)) from None


async def client_for(console: Console) -> Client:
    settings = settings_from(console)
    try:
        return await connect(settings)
    except SettingsError as error:
        raise rejected(str(error)) from None
    except RuntimeError as error:
        raise CommandError(connection_failure(settings, str(error))) from None


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


def run_command(coroutine: Awaitable[int], console: Console, *, interrupted: int = EXIT_FAILURE) -> int:
    """Runs an async command to its exit code; a CommandError prints its message on stderr. Ctrl-C ends it
    with `interrupted` (success for a watch, which Ctrl-C is the normal way to leave)."""

    async def guarded() -> int:
        try:
            return await coroutine
        except CommandError as error:
            console.err(f"error: {error}")
            return error.exit_code
        except RPCError as error:
            console.err(f"error: Temporal: {error.message}")
            return EXIT_FAILURE

    try:
        return asyncio.run(guarded())
    except KeyboardInterrupt:
        return interrupted
    finally:
        shutdown_tracing()  # the command's spans leave before the process does
