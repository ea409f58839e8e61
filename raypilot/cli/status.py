"""`raypilot status KIND/NAMESPACE/NAME [-o json] [--watch]`: the `status` query of the running workflow, or
the result of a completed one; `--watch` polls it about once a second and redraws until the workflow
closes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle

from models.naming import ObjectRef
from raypilot.cli.common import Console, client_for, parse_ref, ref_id, settings_from
from raypilot.cli.render import PhaseMark, advance_timeline, render_status, status_phase
from raypilot.runs.errors import CommandError
from raypilot.runs.lookup import application_cause, describe_ref, with_worker_patience, workflow_state

POLL_SECONDS = 1.0
CLEAR_SCREEN = "\x1b[H\x1b[2J"


@dataclass(frozen=True)
class Observed:
    """A status and whether it is the final one (the workflow's result)."""

    status: dict[str, Any]
    completed: bool


def closed_message(ref: ObjectRef, state: WorkflowExecutionStatus, error: BaseException | None) -> str:
    cause = application_cause(error) if error is not None else None
    detail = f": {cause.message}" if cause is not None else (f": {error}" if error is not None else "")
    return f"{describe_ref(ref)}: workflow {state.name.lower().replace('_', ' ')}{detail}"


async def final_status(
    ref: ObjectRef, handle: WorkflowHandle[Any, Any], state: WorkflowExecutionStatus
) -> Observed:
    """The result of a closed workflow (both workflows return their final status); a failure otherwise."""
    try:
        result = await handle.result()
    except WorkflowFailureError as error:
        raise CommandError(closed_message(ref, state, error.cause)) from None
    if not isinstance(result, dict):
        raise CommandError(closed_message(ref, state, None))
    return Observed(result, completed=True)


async def observe(ref: ObjectRef, handle: WorkflowHandle[Any, Any], task_queue: str) -> Observed:
    state = await workflow_state(handle)
    if state is None:
        raise CommandError(f"no {describe_ref(ref)}")
    if state != WorkflowExecutionStatus.RUNNING:
        return await final_status(ref, handle, state)
    status: dict[str, Any] = await with_worker_patience(
        handle.query("status", result_type=dict), f"status of {describe_ref(ref)}", task_queue
    )
    return Observed(status, completed=False)


async def active_deadline_seconds(client: Client, handle: WorkflowHandle[Any, Any]) -> int | None:
    """spec.activeDeadlineSeconds of the manifest the RayJob workflow started with (for the run-time bar)."""
    try:
        async for event in handle.fetch_history_events():
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            values = await client.data_converter.decode(payloads)
            manifest = values[0] if values else None
            spec = manifest.get("spec") if isinstance(manifest, Mapping) else None
            deadline = spec.get("activeDeadlineSeconds") if isinstance(spec, Mapping) else None
            return deadline if isinstance(deadline, int) and deadline > 0 else None
    except Exception:  # a nicety: the view works without it
        return None
    return None


def as_json(status: Mapping[str, Any], *, indent: int | None = 2) -> str:
    return json.dumps(status, indent=indent, sort_keys=True)


async def show_status(ref_text: str, console: Console, *, output: str, watch: bool) -> int:
    ref = parse_ref(ref_text)
    settings = settings_from(console)
    client = await client_for(console)
    handle = client.get_workflow_handle(ref_id(ref))
    observed = await observe(ref, handle, settings.task_queue)
    if not watch:
        if output == "json":
            console.out(as_json(observed.status))
        else:
            console.out(
                render_status(
                    ref.kind,
                    observed.status,
                    ref=ref_id(ref),
                    now=datetime.now(UTC),
                    completed=observed.completed,
                )
            )
        return 0
    return await watch_status(ref, client, handle, observed, console, output=output)


async def watch_status(
    ref: ObjectRef,
    client: Client,
    handle: WorkflowHandle[Any, Any],
    first: Observed,
    console: Console,
    *,
    output: str,
) -> int:
    """Redraws on a terminal about once a second; elsewhere (a pipe, a log) prints a view whenever the status
    changes. Ends with the final view when the workflow closes."""
    settings = settings_from(console)
    redraw = output != "json" and console.stdout.isatty()
    deadline = await active_deadline_seconds(client, handle) if ref.kind == "RayJob" else None
    closed = asyncio.ensure_future(handle.result()) if not first.completed else None
    timeline: tuple[PhaseMark, ...] = ()
    previous: dict[str, Any] | None = None
    observed = first
    try:
        while True:
            now = datetime.now(UTC)
            timeline = advance_timeline(timeline, status_phase(ref.kind, observed.status), now)
            if output == "json":
                if observed.status != previous:
                    console.out(as_json(observed.status, indent=None))
            else:
                view = render_status(
                    ref.kind,
                    observed.status,
                    ref=ref_id(ref),
                    now=now,
                    timeline=timeline,
                    completed=observed.completed,
                    active_deadline_seconds=deadline,
                )
                if redraw:
                    console.stdout.write(CLEAR_SCREEN)
                    console.out(view)
                elif observed.status != previous or observed.completed:
                    console.out(f"--- {now:%H:%M:%S}\n{view}")
            previous = observed.status
            if observed.completed or closed is None:
                return 0
            await asyncio.wait({closed}, timeout=POLL_SECONDS)
            if closed.done():
                observed = await _closed_result(ref, handle, closed)
                continue
            status: dict[str, Any] = await with_worker_patience(
                handle.query("status", result_type=dict),
                f"status of {describe_ref(ref)}",
                settings.task_queue,
            )
            observed = Observed(status, completed=False)
    finally:
        if closed is not None and not closed.done():
            closed.cancel()


async def _closed_result(
    ref: ObjectRef, handle: WorkflowHandle[Any, Any], closed: asyncio.Future[Any]
) -> Observed:
    try:
        result = closed.result()
    except WorkflowFailureError as error:
        state = await workflow_state(handle) or WorkflowExecutionStatus.FAILED
        raise CommandError(closed_message(ref, state, error.cause)) from None
    if not isinstance(result, dict):
        raise CommandError(f"{describe_ref(ref)}: the workflow closed without a status")
    return Observed(result, completed=True)
