"""`raypilot timeline` end to end on the time-skipping server with fake activities: an incremental upgrade
of a running RayService (drawn up to now), and a finished RayJob."""

from __future__ import annotations

import asyncio
import io
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from raypilot.cli.common import Console
from raypilot.cli.main import run_main
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeWorld
from raypilot.testing.rayservice_scenarios import eventually, incremental_manifest, status_of
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.worker import running_worker
from tests.workflows.rayservice.upgrade_support import apply, serving, upgrade_finished
from tests.workflows.timer_dues import acts_with_decision_times, steps_timed_by_timers, timer_dues
from wire import names

TIMESTAMP_ROUNDING = timedelta(milliseconds=1)


def new_cluster_traffic_steps(routes: list[tuple[datetime, Any]], cluster: str) -> list[tuple[datetime, int]]:
    """(decided at, weight) of each HTTPRoute write that changed `cluster`'s weight."""
    steps: list[tuple[datetime, int]] = []
    for at, route in routes:
        refs = [ref for rule in route["spec"]["rules"] for ref in rule.get("backendRefs") or []]
        weight = next((int(ref["weight"]) for ref in refs if ref["name"] == f"{cluster}-serve-svc"), 0)
        if weight and (not steps or steps[-1][1] != weight):
            steps.append((at, weight))
    return steps


async def _timeline(env: WorkflowEnvironment, task_queue: str, *argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    client = env.client
    console = Console(
        stdout=stdout,
        stderr=stderr,
        env={
            "TEMPORAL_ADDRESS": client.service_client.config.target_host,
            "TEMPORAL_NAMESPACE": client.namespace,
            "RAYPILOT_TASK_QUEUE": task_queue,
        },
    )
    code = await asyncio.to_thread(run_main, ["timeline", *argv], console)
    return code, stdout.getvalue(), stderr.getvalue()


async def test_the_timeline_of_a_running_rayservice_after_an_incremental_upgrade(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, incremental_manifest()) as (handle, old):
        await apply(handle, incremental_manifest("v2"))
        await eventually(env, upgrade_finished(handle, old))
        new = (await status_of(handle))["activeServiceStatus"]["rayClusterName"]
        task_queue = (await handle.describe()).task_queue
        picture = tmp_path / "svc.png"
        code, out, err = await _timeline(env, task_queue, "rayservice/default/svc", "-o", str(picture))
    assert code == 0, err
    assert f"wrote {picture}" in out
    # The manifest's 25 % steps every 10 s, timed by the durable timers (workflow time, skipped here).
    assert [line.split(f"{new} traffic ")[1] for line in out.splitlines() if f"{new} traffic" in line] == [
        "0% -> 25%",
        "25% -> 50%",
        "50% -> 75%",
        "75% -> 100%",
    ]
    # Each of those steps was decided by a durable timer due 10 s after the step before (workflow time).
    history = await handle.fetch_history()
    steps = new_cluster_traffic_steps(acts_with_decision_times(history, names.UPDATE_HTTPROUTE_SPEC), new)
    assert [weight for _, weight in steps] == [25, 50, 75, 100]
    decided = [at for at, _ in steps]
    assert not steps_timed_by_timers(
        decided, timedelta(seconds=10), timer_dues(history), TIMESTAMP_ROUNDING
    ), decided
    assert f"{old} traffic 25% -> 0%" in out
    assert "update apply" in out
    assert picture.stat().st_size > 20_000  # a drawn picture, not an empty figure


async def test_the_timeline_of_a_finished_rayjob_and_of_no_workflow(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = time_skipping_env
    world = FakeWorld()
    async with running_worker(env.client, activities=world.activities()) as task_queue:
        handle = await start(env.client, rayjob_manifest(shutdownAfterJobFinishes=True), task_queue)
        await handle.result()
        picture = tmp_path / "job.svg"
        code, out, err = await _timeline(env, task_queue, "rayjob/default/sample", "-o", str(picture))
        assert code == 0, err
        assert [line.split("phase ")[1] for line in out.splitlines() if "phase " in line] == [
            "Initializing",
            "Running",
            "Complete",
        ]
        assert picture.read_text().lstrip().startswith("<?xml")
        missing, _, err = await _timeline(env, task_queue, "rayjob/default/nothing")
        assert missing == 1
        assert "no rayjob default/nothing" in err
        rejected, _, err = await _timeline(env, task_queue, "rayjob/default/sample", "-o", "x.pdf")
        assert rejected == 2
