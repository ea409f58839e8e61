"""Replay tests over committed histories: a changed workflow must still replay every recorded run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from temporalio.client import WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer, WorkflowReplayResult

from raypilot.converter import raypilot_data_converter


async def replay_history_file(path: Path, workflows: Sequence[type] | None = None) -> WorkflowReplayResult:
    """Replays one history exported as JSON (`temporal workflow show --output json` or `save_history`);
    raises on nondeterminism."""
    if workflows is None:
        from workflows.registry import WORKFLOWS

        workflows = WORKFLOWS
    history = WorkflowHistory.from_json(path.stem, await asyncio.to_thread(path.read_text))
    replayer = Replayer(workflows=list(workflows), data_converter=raypilot_data_converter)
    return await replayer.replay_workflow(history)


async def replay_history_files(
    paths: Sequence[Path], workflows: Sequence[type] | None = None
) -> dict[str, WorkflowReplayResult]:
    """Replays several exported histories on one replaying worker (each worker's start validates every
    workflow class in the sandbox again: seconds of CPU per history), without raising; the results by file
    stem."""
    if workflows is None:
        from workflows.registry import WORKFLOWS

        workflows = WORKFLOWS

    async def histories() -> AsyncIterator[WorkflowHistory]:
        for path in paths:
            yield WorkflowHistory.from_json(path.stem, await asyncio.to_thread(path.read_text))

    replayer = Replayer(workflows=list(workflows), data_converter=raypilot_data_converter)
    results: dict[str, WorkflowReplayResult] = {}
    async with replayer.workflow_replay_iterator(histories()) as replayed:
        async for result in replayed:
            results[result.history.workflow_id] = result
    return results


async def save_history(handle: WorkflowHandle[object, object], path: Path) -> None:
    """Writes a finished or running workflow's history where replay tests find it."""
    history = await handle.fetch_history()
    text = json.dumps(json.loads(history.to_json()), indent=1) + "\n"

    def write() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    await asyncio.to_thread(write)
