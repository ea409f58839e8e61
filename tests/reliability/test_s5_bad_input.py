"""S5: bad input through the three doors: `raypilot apply`, the temporal CLI (`temporal workflow start`) and
the `apply` update of a live workflow.

Pass means each is rejected with a clear message (KubeRay's, exactly, where KubeRay has one), nothing is
created (no workflow from `raypilot apply`, no Kubernetes object from any door), and the live workflow is
untouched (same status, no new history event).
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from raypilot.cli.common import Console
from raypilot.cli.main import main
from raypilot.testing.binaries import temporal_cli
from tests.integration.rayjob_support import example
from tests.integration.rayservice_helpers import rayservice, wait_for_status
from tests.integration.stack import WORKFLOW_TYPES, Stack
from tests.reliability.bad_input import BASE_NAMES, BadInput, malformed, rule_violations
from tests.reliability.figures import FULL, SEED, Figure, figure
from tests.reliability.ledger import Ledger
from tests.reliability.objects import OWNED_KINDS, store_list

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(900 if FULL else 120)]


def cases(sample: int | None) -> list[BadInput]:
    """Every malformed input and the rule violations (a seeded sample of `sample` of them, if given)."""
    rules = rule_violations()
    if sample is not None:
        rules = random.Random(SEED).sample(rules, sample)
    return [*malformed(), *rules]


def clear(case: BadInput, message: str) -> bool:
    return message.strip() == case.message if case.exact else case.message in message


def objects_everywhere(stack: Stack) -> set[str]:
    """The uid of every object of the kinds raypilot creates, in every namespace (the stack is shared with
    earlier tests, whose objects may still be going: a test looks for new uids, not for equal counts)."""
    return {
        str(obj["metadata"]["uid"])
        for version, kind in OWNED_KINDS
        for obj in store_list(stack, version, kind, None)
    }


def check(recorded: Figure, case: BadInput, door: str, message: str, problems: list[str]) -> None:
    recorded.tried += 1
    if clear(case, message):
        recorded.survived += 1
    else:
        problems.append(f"{door}, {case.name}: {message[:300]!r} (expected {case.message[:200]!r})")


async def raypilot_apply_answer(env: dict[str, str], case: BadInput, path: Path) -> str:
    """What `raypilot apply -f PATH` says of the case's text written at `path`: its error (exit 2), or how it
    exited otherwise."""
    stdout, stderr = io.StringIO(), io.StringIO()
    console = Console(stdout=stdout, stderr=stderr, env=env, stdin=io.StringIO(""))

    def apply() -> int:
        path.write_text(case.text)
        return main(["apply", "-f", str(path)], console)

    code = await asyncio.to_thread(apply)
    return stderr.getvalue().strip().removeprefix("error: ") if code == 2 else f"exit {code}"


async def test_raypilot_apply_rejects_bad_input(reliability_stack: Stack, tmp_path: Path) -> None:
    stack, recorded, problems = reliability_stack, figure("S5", "bad input: raypilot apply"), []
    env = {
        "TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "RAYPILOT_TASK_QUEUE": stack.task_queue,
        "HOME": "/nonexistent",
    }
    workflows_before, objects_before = await stack.client.count_workflows(), objects_everywhere(stack)
    for index, case in enumerate(cases(sample=None)):
        message = await raypilot_apply_answer(env, case, tmp_path / f"case-{index}.yaml")
        if case.cli_message is not None:
            case = dataclasses.replace(case, message=case.cli_message, exact=False)
        check(recorded, case, "raypilot apply", message, problems)
    assert (await stack.client.count_workflows()).count == workflows_before.count, "a workflow was started"
    assert not objects_everywhere(stack) - objects_before, "an object was created"
    assert not problems, "\n".join(problems)


async def temporal_start(client: Client, task_queue: str, case: BadInput, path: Path) -> tuple[int, str]:
    """`temporal workflow start ... --input-file PATH`: its exit code and output."""
    process = await asyncio.create_subprocess_exec(
        temporal_cli(), "workflow", "start", "--address", client.service_client.config.target_host,
        "--namespace", client.namespace, "--task-queue", task_queue, "--type", WORKFLOW_TYPES[case.kind],
        "--workflow-id", path.stem, "--input-file", str(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await process.communicate()
    return await process.wait(), output.decode(errors="replace")


async def workflow_failure(handle: WorkflowHandle[Any, Any]) -> str:
    """The message of a workflow's ValidationFailed failure, or what happened instead."""
    try:
        result = await asyncio.wait_for(handle.result(), timeout=30)
    except WorkflowFailureError as failure:
        cause = failure.cause
        if isinstance(cause, ApplicationError) and cause.type == "ValidationFailed" and cause.non_retryable:
            return cause.message
        return f"failed otherwise: {cause!r}"
    except TimeoutError:
        return "still running after 30 s (a workflow task failing and retrying?)"
    return f"completed: {json.dumps(result)[:200]}"


async def check_temporal_start(
    stack: Stack, ledger: Ledger, recorded: Figure, case: BadInput, path: Path, problems: list[str]
) -> None:
    """Starts `case` (its text at `path`) with `temporal workflow start` and checks what the user is told: the
    CLI's own refusal of text that is not JSON, Temporal's refusal of the start (too large), or the workflow's
    ValidationFailed message."""
    code, output = await temporal_start(stack.client, stack.task_queue, case, path)
    if code != 0 and case.document is None:  # the CLI itself refused text that is not JSON
        recorded.tried, recorded.survived = recorded.tried + 1, recorded.survived + 1
        return
    if code != 0:  # Temporal refused the start (too large): its message is the user's
        check(recorded, case, "temporal CLI", output, problems)
        return
    handle = stack.client.get_workflow_handle(path.stem)
    check(recorded, case, "temporal CLI", await workflow_failure(handle), problems)
    await ledger.record(handle)


async def test_temporal_cli_start_rejects_bad_input(
    reliability_stack: Stack, ledger: Ledger, tmp_path: Path
) -> None:
    stack, recorded, problems = reliability_stack, figure("S5", "bad input: temporal workflow start"), []
    objects_before = objects_everywhere(stack)
    for index, case in enumerate(cases(sample=None if FULL else 6)):
        path = tmp_path / f"s5-{uuid.uuid4().hex[:8]}-{index}.json"
        path.write_text(case.text)
        await check_temporal_start(stack, ledger, recorded, case, path, problems)
    assert not objects_everywhere(stack) - objects_before, "an object was created"
    assert not problems, "\n".join(problems)


def addressed_to(case: BadInput, workflow_id: str) -> Any:
    """The case's manifest renamed to the live workflow's object, or None when it cannot be sent: text that
    is not JSON, or a case about the name itself (a renamed object is another object, rejected as such)."""
    document = case.document
    if case.text.lstrip().startswith("[") or not isinstance(document, dict):
        return document if document is not None and not isinstance(document, dict) else None
    metadata = document.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("name") not in BASE_NAMES:
        return None
    _, namespace, name = workflow_id.split("/")
    return {**document, "metadata": {**metadata, "name": name, "namespace": namespace}}


def suspended(status: dict[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") == "Suspended"


def initializing(status: dict[str, Any]) -> bool:
    return bool(status.get("observedGeneration"))


async def accepted_updates(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for event in history.events
        if event.HasField("workflow_execution_update_accepted_event_attributes")
    ]


# A rejected update can leave one empty workflow task in the history (scheduled, started, completed; no
# command): seen for the first update a suspended RayJob receives on a worker with a Temporal client. It
# changes nothing the workflow holds, so "untouched" counts every other event.
WORKFLOW_TASK_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
}


async def history_length(handle: WorkflowHandle[Any, Any]) -> int:
    """The number of events that record something the workflow did or received."""
    events = (await handle.fetch_history()).events
    return sum(1 for event in events if event.event_type not in WORKFLOW_TASK_EVENTS)


async def apply_answer(handle: WorkflowHandle[Any, Any], document: Any) -> str:
    """The message of the `apply` update's ValidationFailed rejection of `document`, or what happened
    instead."""
    try:
        answer = await handle.execute_update("apply", document)
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        if isinstance(cause, ApplicationError) and cause.type == "ValidationFailed":
            return cause.message
        return f"failed otherwise: {cause!r}"
    except RPCError as error:
        return f"RPC {error.status.name}: {error.message}"
    return f"accepted: {answer}"


async def test_apply_update_rejects_bad_input_and_leaves_the_workflow_alone(
    reliability_stack: Stack, ledger: Ledger
) -> None:
    stack, recorded, problems = reliability_stack, figure("S5", "bad input: apply update, live workflow"), []
    namespace = stack.namespace()
    live = {
        "RayJob": await stack.start(
            example("rayjob-httpmode", namespace, suspend=True, shutdownAfterJobFinishes=True)
        ),
        "RayService": await stack.start(rayservice(namespace, "live", "v1")),
    }
    await wait_for_status(stack, live["RayJob"], suspended, within=60, what="RayJob suspended")
    await wait_for_status(stack, live["RayService"], initializing, within=60, what="RayService initializing")
    suspended_job = (await stack.status(live["RayJob"]), await history_length(live["RayJob"]))
    for case in cases(sample=None):
        document = addressed_to(case, live[case.kind].id)
        if document is None:
            continue
        message = await apply_answer(live[case.kind], document)
        check(recorded, case, f"apply update ({case.kind})", message, problems)
    assert (await stack.status(live["RayJob"]), await history_length(live["RayJob"])) == suspended_job
    assert (await stack.status(live["RayService"])).get("observedGeneration") == 1, "a new generation"
    for kind, handle in live.items():
        assert not await accepted_updates(handle), f"{kind}: an update was accepted"
        await handle.execute_update("delete")
        await handle.result()
        await ledger.record(handle)
    assert not problems, "\n".join(problems)
