"""The history digest a failing test prints: a RayJob's run, read back, says what it called, what came back,
which signals and updates it took, and how it ended."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeWorld
from tests.workflows.history_digest import history_digest
from wire import names

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]


async def test_a_finished_rayjob_reads_back_as_its_calls_answers_and_end(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = FakeWorld()
    async with fake_worker(time_skipping_env.client, activities=world.activities()) as queue:
        handle = await start(time_skipping_env.client, rayjob_manifest(), queue)
        await handle.result()
        digest = await history_digest(handle)

    assert any(f"{names.CREATE_RAYCLUSTER} returned:" in line for line in digest), digest
    assert any(f"{names.SUBMIT_JOB} returned:" in line and '"submission_id"' in line for line in digest), (
        digest
    )
    assert any(f"schedule {names.WAIT_RAY_JOB}:" in line for line in digest), digest
    assert " completed: " in digest[-1], digest[-1]
    assert '"jobId"' in digest[-1]
    assert all(line.split(" ", 1)[0].isdigit() for line in digest)
