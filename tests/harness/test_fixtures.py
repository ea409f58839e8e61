"""The shipped test harness: Temporal servers from installed binaries, fake activities under real names,
replay over saved histories."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import activity, workflow
from temporalio.testing import WorkflowEnvironment

from models.features import FeatureGates
from models.operator import OperatorConfig
from raypilot.search_attributes import missing_search_attributes
from raypilot.testing.replay import replay_history_file, replay_history_files, save_history
from wire.names import READ_OPERATOR_CONFIG
from workflows.search_attributes import RAY_PHASE

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]


@activity.defn(name=READ_OPERATOR_CONFIG)
def fake_operator_config() -> OperatorConfig:
    return OperatorConfig(feature_gates=FeatureGates(ray_job_deletion_policy=False))


# Harness-only workflows, unsandboxed because they live in a test module.
@workflow.defn(name="HarnessSleeper", sandboxed=False)
class HarnessSleeper:
    @workflow.run
    async def run(self, days: int) -> str:
        config = await workflow.execute_local_activity(
            READ_OPERATOR_CONFIG, result_type=OperatorConfig, start_to_close_timeout=timedelta(seconds=10)
        )
        workflow.upsert_search_attributes([RAY_PHASE.value_set("Sleeping")])
        await workflow.sleep(timedelta(days=days))
        return f"deletion policy gate {config.feature_gates.ray_job_deletion_policy}"


@workflow.defn(name="HarnessSleeper", sandboxed=False)
class ChangedHarnessSleeper:
    """The same workflow type after an incompatible change: it sleeps before reading the configuration."""

    @workflow.run
    async def run(self, days: int) -> str:
        await workflow.sleep(timedelta(days=days))
        return "changed"


async def test_time_skipping_env_skips_days_and_knows_search_attributes(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    client = time_skipping_env.client
    started = await time_skipping_env.get_current_time()
    async with fake_worker(client, workflows=[HarnessSleeper], activities=[fake_operator_config]) as queue:
        result = await client.execute_workflow(HarnessSleeper.run, 30, id="harness-sleeper", task_queue=queue)
    # The fake activity ran under the real activity name.
    assert result == "deletion policy gate False"
    assert await time_skipping_env.get_current_time() - started >= timedelta(days=30)


async def test_time_skipping_env_client_sends_no_keepalive_pings(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """The test server closes a connection that pings more than once per 5 minutes while a slow `env.sleep`
    holds it silent (raypilot/testing/time_skipping.py): the env's client is connected without pings, and
    its sleeps still skip time."""
    assert time_skipping_env.client.service_client.config.keep_alive_config is None
    before = await time_skipping_env.get_current_time()
    await time_skipping_env.sleep(timedelta(hours=1))
    assert await time_skipping_env.get_current_time() - before >= timedelta(hours=1)


async def test_replay_helper_accepts_the_same_code_and_rejects_a_change(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, tmp_path: Path
) -> None:
    client = time_skipping_env.client
    async with fake_worker(client, workflows=[HarnessSleeper], activities=[fake_operator_config]) as queue:
        handle = await client.start_workflow(HarnessSleeper.run, 1, id="harness-replay", task_queue=queue)
        await handle.result()
    history = tmp_path / "harness-replay.json"
    await save_history(handle, history)

    await replay_history_file(history, workflows=[HarnessSleeper])
    with pytest.raises(workflow.NondeterminismError):
        await replay_history_file(history, workflows=[ChangedHarnessSleeper])
    # Several on one replaying worker: each history's own result, a failure not stopping the next.
    other = tmp_path / "harness-replay-again.json"
    other.write_text(history.read_text())
    same = await replay_history_files([history, other], workflows=[HarnessSleeper])
    assert {stem: result.replay_failure for stem, result in same.items()} == {
        "harness-replay": None,
        "harness-replay-again": None,
    }
    changed = await replay_history_files([history, other], workflows=[ChangedHarnessSleeper])
    assert sorted(changed) == ["harness-replay", "harness-replay-again"]
    assert all(isinstance(r.replay_failure, workflow.NondeterminismError) for r in changed.values())


async def test_dev_server_env_has_raypilot_search_attributes(dev_server_env: WorkflowEnvironment) -> None:
    assert await missing_search_attributes(dev_server_env.client, "default") == []


async def test_dev_server_env_runs_workflows(
    dev_server_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    client = dev_server_env.client
    async with fake_worker(client, workflows=[HarnessSleeper], activities=[fake_operator_config]) as queue:
        handle = await client.start_workflow(HarnessSleeper.run, 0, id="harness-dev", task_queue=queue)
        assert await asyncio.wait_for(handle.result(), timeout=30) == "deletion policy gate False"
        described = await handle.describe()
    assert described.typed_search_attributes.get(RAY_PHASE) == "Sleeping"
