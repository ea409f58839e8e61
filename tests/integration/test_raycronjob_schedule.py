"""RayCronJob schedules on the dev server (the time-skipping server has no Schedules): the schedule `raypilot
apply` makes fires KubeRay's ticks to the second in the RayCronJob's time zone, each tick runs the RayJob
named after its minute, every concurrencyPolicy holds with the worker down across several ticks, history
limits prune, suspend pauses and the controls work. RayJobs are the stand-in of tests/workflows/raycronjob (no
cluster); the sandbox run of KubeRay's samples is tests/raypilot/cli/test_raycronjob_cli.py. Past ticks come
from backfills, so simulated days take seconds."""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client, ScheduleOverlapPolicy, WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from activities.cronjob_runs import CronJobRunActivities
from activities.dependencies import ActivityDependencies
from activities.registry import activity_methods
from raypilot.cli.common import Console
from raypilot.cli.main import main
from raypilot.testing.worker import console_env, running_worker
from tests.workflows.raycronjob.fakes_raycronjob import FakeRayJobWorkflow, cronjob_manifest
from workflows.raycronjob.workflow import RayCronJobTickWorkflow

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(240)]

WORKFLOWS = [RayCronJobTickWorkflow, FakeRayJobWorkflow]


@dataclass
class CronStack:
    client: Client
    env: dict[str, str]
    workdir: Path

    async def cli(self, *argv: str) -> tuple[int, str, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        console = Console(stdout=stdout, stderr=stderr, env=dict(self.env))
        code = await asyncio.to_thread(main, list(argv), console)
        return code, stdout.getvalue(), stderr.getvalue()

    async def apply(self, manifest: dict[str, Any]) -> str:
        path = self.workdir / f"{manifest['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        code, out, err = await self.cli("apply", "-f", str(path))
        assert code == 0, err
        return out

    async def rayjobs(self, namespace: str, name: str) -> dict[str, WorkflowExecutionStatus | None]:
        query = f"WorkflowType = 'RayJobWorkflow' AND RayNamespace = '{namespace}' AND RayCronJob = '{name}'"
        return {execution.id: execution.status async for execution in self.client.list_workflows(query)}

    async def ticks(self, namespace: str, name: str, *, closed: bool = False) -> list[str]:
        query = f"WorkflowType = 'RayCronJobTick' AND RayNamespace = '{namespace}' AND RayCronJob = '{name}'"
        if closed:
            query += " AND ExecutionStatus != 'Running'"
        return sorted([execution.id async for execution in self.client.list_workflows(query)])


def no_leftovers(dependencies: ActivityDependencies, ref: Any) -> None:
    """No cluster here: nothing is left in Kubernetes."""


@pytest.fixture
async def cron_stack(dev_server_env: WorkflowEnvironment, tmp_path: Path) -> CronStack:
    client = dev_server_env.client
    queue = f"cron-{uuid.uuid4().hex[:8]}"
    return CronStack(client, console_env(client, queue), tmp_path)


def worker(stack: CronStack) -> Any:
    dependencies = ActivityDependencies.from_env({"HOME": "/nonexistent"}, temporal_client=stack.client)
    activities = activity_methods(CronJobRunActivities(dependencies, leftovers=no_leftovers))
    return running_worker(
        stack.client, activities=activities, workflows=WORKFLOWS, task_queue=stack.env["RAYPILOT_TASK_QUEUE"]
    )


async def until(probe: Callable[[], Awaitable[bool]], what: str, seconds: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not await probe():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not in time: {what}")
        await asyncio.sleep(0.2)


def unix_minute(moment: datetime) -> int:
    return int(moment.timestamp()) // 60


async def test_ticks_are_kuberays_minutes_in_the_time_zone_and_history_limits_prune(
    cron_stack: CronStack,
) -> None:
    namespace, name = f"cron-{uuid.uuid4().hex[:6]}", "taipei"
    limits = "concurrencyPolicy: BufferAll\nsuccessfulJobsHistoryLimit: 2"
    manifest = cronjob_manifest(
        name,
        namespace,
        schedule="45 21 * * *",
        timeZone="Asia/Taipei",
        annotations={"raypilot.io/schedule": limits},
    )
    assert "created" in await cron_stack.apply(manifest)
    schedule = await cron_stack.client.get_schedule_handle(f"raycronjob/{namespace}/{name}").describe()
    assert schedule.schedule.policy.overlap == ScheduleOverlapPolicy.BUFFER_ALL
    async with worker(cron_stack):
        # Three simulated days: 21:45 in Taipei is 13:45 UTC.
        code, _, err = await cron_stack.cli(
            "cronjob",
            "backfill",
            f"raycronjob/{namespace}/{name}",
            "--from",
            "2026-11-20T00:00:00Z",
            "--to",
            "2026-11-23T00:00:00Z",
        )
        assert code == 0, err
        days = [datetime(2026, 11, day, 13, 45, tzinfo=UTC) for day in (20, 21, 22)]
        expected = [f"rayjob/{namespace}/{name}-{unix_minute(day)}" for day in days]

        async def three_ran() -> bool:
            return len(await cron_stack.ticks(namespace, name, closed=True)) == len(days)

        await until(three_ran, "three ticks ran")
        ticks = await cron_stack.ticks(namespace, name)
        last_tick = await cron_stack.client.get_workflow_handle(ticks[-1]).result()
        rayjob = await cron_stack.client.get_workflow_handle(expected[2]).result()
        code, out, err = await cron_stack.cli("status", f"raycronjob/{namespace}/{name}", "-o", "json")
    assert ticks == [f"raycronjob/{namespace}/{name}-{day:%Y-%m-%dT%H:%M:%SZ}" for day in days]
    # successfulJobsHistoryLimit 2: the third tick deleted the first tick's RayJob (Temporal removes a deleted
    # run in the background, ~30 s on the dev server, so the test does not wait for it).
    assert last_tick["pruned"] == [expected[0].rsplit("/", 1)[-1]], last_tick
    assert rayjob["metadata"]["annotations"] == {"ray.io/cronjob-scheduled-timestamp": "2026-11-22T13:45:00Z"}
    assert code == 0, err
    status = json.loads(out)
    assert status["lastScheduleTime"] == "2026-11-22T13:45:00Z"
    assert all(moment.endswith("T13:45:00Z") for moment in status["nextScheduleTimes"])
    assert {job.rsplit("/", 1)[-1] for job in expected[1:]} <= {run["name"] for run in status["runs"]}


POLICIES = ("Allow", "Forbid", "Replace", "BufferOne", "BufferAll")
YEARS = (2022, 2023, 2024, 2025)


async def test_every_concurrency_policy_with_the_worker_down_across_four_ticks(cron_stack: CronStack) -> None:
    namespace = f"cron-{uuid.uuid4().hex[:6]}"
    for policy in POLICIES:
        settings = f"concurrencyPolicy: {policy}\nsuccessfulJobsHistoryLimit: 10"
        manifest = cronjob_manifest(
            policy.lower(), namespace, schedule="@yearly", annotations={"raypilot.io/schedule": settings}
        )
        await cron_stack.apply(manifest)
        # Four ticks (1 January 2022-2025) while no worker runs: each tick waits for one.
        code, _, err = await cron_stack.cli(
            "cronjob",
            "backfill",
            f"raycronjob/{namespace}/{policy.lower()}",
            "--from",
            "2021-12-31T00:00:00Z",
            "--to",
            "2025-01-02T00:00:00Z",
        )
        assert code == 0, err
    client = cron_stack.client

    async def all_started() -> bool:
        for policy in POLICIES:
            info = (
                await client.get_schedule_handle(f"raycronjob/{namespace}/{policy.lower()}").describe()
            ).info
            # Temporal follows no running workflow under AllowAll: it counts the actions taken.
            if info.num_actions < (len(YEARS) if policy == "Allow" else 1) or (
                policy != "Allow" and not info.running_actions
            ):
                return False
        return True

    await until(all_started, "the backfilled ticks started")

    def job(policy: str, year: int) -> str:
        return f"rayjob/{namespace}/{policy.lower()}-{unix_minute(datetime(year, 1, 1, tzinfo=UTC))}"

    expected = {
        "Allow": [job("Allow", year) for year in YEARS],
        "Forbid": [job("Forbid", 2022)],
        "BufferOne": [job("BufferOne", 2022), job("BufferOne", 2023)],
        "BufferAll": [job("BufferAll", year) for year in YEARS],
        # CancelOther with nothing running yet: the newest buffered tick supersedes the others.
        "Replace": [job("Replace", 2025)],
    }
    async with worker(cron_stack):

        async def settled() -> bool:
            for policy, jobs in expected.items():
                found = await cron_stack.rayjobs(namespace, policy.lower())
                if sorted(found) != jobs or set(found.values()) != {WorkflowExecutionStatus.COMPLETED}:
                    return False
            return True

        await until(settled, "every policy's RayJobs finished")
        results = {
            policy: [await client.get_workflow_handle(wid).result() for wid in jobs]
            for policy, jobs in expected.items()
        }
        ticks = {policy: await cron_stack.ticks(namespace, policy.lower()) for policy in POLICIES}
    # BufferAll ran them one after the other, in tick order.
    starts = [result["startedAt"] for result in results["BufferAll"]]
    assert starts == sorted(starts)
    assert all(result["jobStatus"] == "SUCCEEDED" for jobs in results.values() for result in jobs)
    # Forbid skipped three ticks; BufferOne kept one of them; Replace's newest tick superseded the others.
    assert {policy: len(found) for policy, found in ticks.items()} == {
        "Allow": 4,
        "Forbid": 1,
        "Replace": 1,
        "BufferOne": 2,
        "BufferAll": 4,
    }


async def test_suspend_pauses_and_the_controls(cron_stack: CronStack) -> None:
    namespace, name = f"cron-{uuid.uuid4().hex[:6]}", "controls"
    ref = f"raycronjob/{namespace}/{name}"
    handle = cron_stack.client.get_schedule_handle(ref)
    await cron_stack.apply(cronjob_manifest(name, namespace, schedule="@yearly", suspend=True))
    assert (await handle.describe()).schedule.state.paused
    assert "configured" in await cron_stack.apply(cronjob_manifest(name, namespace, schedule="@yearly"))
    assert not (await handle.describe()).schedule.state.paused
    code, out, _ = await cron_stack.cli("cronjob", "pause", ref, "--note", "maintenance")
    assert code == 0
    assert "paused" in out
    # A later apply without suspend keeps a pause made by hand; its new jobTemplate applies to the next run.
    await cron_stack.apply(cronjob_manifest(name, namespace, schedule="@yearly", entrypoint="fail"))
    state = (await handle.describe()).schedule.state
    assert (state.paused, state.note) == (True, "maintenance")
    assert (await cron_stack.cli("cronjob", "unpause", ref))[0] == 0
    assert not (await handle.describe()).schedule.state.paused
    async with worker(cron_stack):
        assert (await cron_stack.cli("cronjob", "trigger", ref))[0] == 0

        async def ran() -> bool:
            found = await cron_stack.rayjobs(namespace, name)
            return list(found.values()) == [WorkflowExecutionStatus.COMPLETED]

        await until(ran, "the triggered RayJob finished")
        (rayjob,) = await cron_stack.rayjobs(namespace, name)
        assert (await cron_stack.client.get_workflow_handle(rayjob).result())["jobStatus"] == "FAILED"
    code, _, err = await cron_stack.cli(
        "cronjob", "backfill", ref, "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"
    )
    assert (code, err.strip()) == (2, "error: --to must be after --from")
    code, _, err = await cron_stack.cli("status", f"raycronjob/{namespace}/missing")
    assert (code, err.strip()) == (1, f"error: no raycronjob {namespace}/missing")
