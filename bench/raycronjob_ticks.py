"""RayCronJob tick precision and history cost on a Temporal dev server (opt-in:
`python -m bench.raycronjob_ticks [--ticks N]`, about N minutes).

A RayCronJob with `* * * * *` is applied with `raypilot apply`; a worker runs the real tick workflow and
activities with a stand-in RayJob (no cluster, tests/workflows/raycronjob/fakes_raycronjob.py). For each tick:
the wall time from the nominal minute to the tick workflow's start and to its RayJob workflow's start (both
the server's start times), and the history events of the tick workflow. The reference is Temporal itself: the
same schedule's own action start, so the tick error shows how much the RayCronJob adds."""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import tempfile
import uuid
from pathlib import Path

import yaml
from temporalio.testing import WorkflowEnvironment

from activities.cronjob_runs import CronJobRunActivities
from activities.dependencies import ActivityDependencies
from activities.registry import activity_methods
from raypilot.cli.common import Console
from raypilot.cli.main import main
from raypilot.converter import raypilot_data_converter
from raypilot.testing.binaries import temporal_cli
from raypilot.testing.worker import console_env, running_worker
from tests.workflows.raycronjob.fakes_raycronjob import FakeRayJobWorkflow, cronjob_manifest
from workflows.decisions.raycronjob.runs import scheduled_time_from_tick_id
from workflows.raycronjob.workflow import RayCronJobTickWorkflow
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES


async def measure(ticks: int) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(),
        data_converter=raypilot_data_converter,
        search_attributes=ALL_SEARCH_ATTRIBUTES,
        dev_server_log_level="error",
    )
    client = env.client
    queue = f"bench-cron-{uuid.uuid4().hex[:6]}"
    dependencies = ActivityDependencies.from_env({"HOME": "/nonexistent"}, temporal_client=client)
    activities = activity_methods(CronJobRunActivities(dependencies, leftovers=lambda *_: None))
    try:
        async with running_worker(
            client,
            activities=activities,
            workflows=[RayCronJobTickWorkflow, FakeRayJobWorkflow],
            task_queue=queue,
            replay_every_task=False,
        ):
            with tempfile.TemporaryDirectory() as directory:
                path = Path(directory) / "cron.yaml"
                path.write_text(
                    yaml.safe_dump(
                        cronjob_manifest(
                            "bench",
                            "bench",
                            schedule="* * * * *",
                            annotations={"raypilot.io/schedule": "successfulJobsHistoryLimit: 100"},
                        )
                    )
                )
                console = Console(stdout=io.StringIO(), stderr=io.StringIO(), env=console_env(client, queue))
                assert await asyncio.to_thread(main, ["apply", "-f", str(path)], console) == 0
            query = (
                "WorkflowType = 'RayCronJobTick' AND RayCronJob = 'bench' AND ExecutionStatus = 'Completed'"
            )
            while True:
                done = [execution async for execution in client.list_workflows(query)]
                if len(done) >= ticks:
                    break
                await asyncio.sleep(1)
            tick_errors, rayjob_errors, events = [], [], []
            for execution in sorted(done, key=lambda item: item.id)[:ticks]:
                nominal = scheduled_time_from_tick_id(execution.id)
                assert nominal is not None
                result = await client.get_workflow_handle(execution.id).result()
                rayjob = await client.get_workflow_handle(f"rayjob/bench/{result['rayJob']}").describe()
                history = await client.get_workflow_handle(execution.id).fetch_history()
                tick_errors.append((execution.start_time - nominal).total_seconds())
                rayjob_errors.append((rayjob.start_time - nominal).total_seconds())
                events.append(len(history.events))
                print(
                    f"{execution.id}: tick started +{tick_errors[-1]:.3f} s, RayJob started "
                    f"+{rayjob_errors[-1]:.3f} s, {events[-1]} history events"
                )
            print(
                f"tick error: median {statistics.median(tick_errors):.3f} s, max {max(tick_errors):.3f} s; "
                f"RayJob start: median {statistics.median(rayjob_errors):.3f} s, "
                f"max {max(rayjob_errors):.3f} s; "
                f"tick history events: {sorted(set(events))}"
            )
            await client.get_schedule_handle("raycronjob/bench/bench").delete()
    finally:
        await dependencies.aclose()
        await env.shutdown()


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ticks", type=int, default=3)
    asyncio.run(measure(parser.parse_args().ticks))


if __name__ == "__main__":
    main_cli()
