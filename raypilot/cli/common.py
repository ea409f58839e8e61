"""What every Temporal-facing `raypilot` command shares: where it writes, its environment, the client, and
turning Temporal errors into the contract's exit statuses (docs/contract.md §6, raypilot/runs/errors.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import TextIO, TypeVar

from temporalio.client import Client
from temporalio.service import RPCError

from models.naming import ObjectRef, parse_object_ref, workflow_id
from raypilot.runs.errors import EXIT_FAILURE, CommandError, rejected
from raypilot.settings import SettingsError, TemporalSettings, connect, connection_failure
from raypilot.tracing import shutdown_tracing

T = TypeVar("T")


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
