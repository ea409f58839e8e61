"""S1: `kill -9` of the worker process at seeded random points of a RayJob's life (backoffLimit, failing
attempts, a DeleteCluster rule with a TTL), restarting it each time, against the same real stack and dev
server.

Pass means the same end state as an undisturbed run (Failed, one RayCluster per attempt and no duplicate,
nothing left after the deletion rule) and the cluster deleted no earlier than endTime + TTL, and late only
by the time the worker was down. The worker runs as `python worker.py`, as in production.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus

from tests.integration.rayjob_support import example, parse_time
from tests.integration.stack import Stack
from tests.reliability.conftest import WorkerApi
from tests.reliability.figures import FULL, SEED, figure, sized
from tests.reliability.ledger import Ledger
from tests.reliability.objects import leftovers, names_seen, store_list

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(1800 if FULL else 240)]

REPO = Path(__file__).resolve().parents[2]
TTL_SECONDS = 3
# How long a kill may delay the deletion beyond the worker's restart: a workflow task on the dead worker's
# sticky queue goes back to the normal queue after 5 s (the SDK default); then one activity.
DELETION_SLACK_SECONDS = 8.0


def failing_rayjob(namespace: str, attempts: int) -> dict[str, Any]:
    rules = [{"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": TTL_SECONDS}}]
    return example(
        "rayjob-httpmode", namespace, rename="killed", entrypoint="sleep 1; exit 1",
        backoffLimit=attempts - 1, deletionStrategy={"deletionRules": rules},
    )  # fmt: skip


class WorkerProcess:
    """`python worker.py` on its own task queue; `kill()` is kill -9; `start()` returns once it serves."""

    def __init__(self, stack: Stack, kubeconfig: Path, log: Path) -> None:
        self.env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "RAYPILOT_DASHBOARD_ACCESS": "proxy",
            "TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
            "TEMPORAL_NAMESPACE": stack.client.namespace,
            "RAYPILOT_TASK_QUEUE": f"{stack.task_queue}-process",
        }
        self.task_queue = self.env["RAYPILOT_TASK_QUEUE"]
        self.log = log
        self.process: asyncio.subprocess.Process | None = None
        self.down_seconds = 0.0

    async def start(self) -> None:
        began = time.monotonic()
        with self.log.open("ab") as output:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, str(REPO / "worker.py"), env=self.env, cwd=REPO, stdout=output, stderr=output
            )
        deadline = time.monotonic() + 60
        while b"worker started" not in self.log.read_bytes().split(b"--- killed ---")[-1]:
            assert self.process.returncode is None, self.log.read_text()[-2000:]
            assert time.monotonic() < deadline, "the worker did not start within 60 s"
            await asyncio.sleep(0.1)
        self.down_seconds += time.monotonic() - began

    async def kill(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        with self.log.open("ab") as output:
            output.write(b"\n--- killed ---\n")

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


@asynccontextmanager
async def worker_process(stack: Stack, kubeconfig: Path, log: Path) -> AsyncIterator[WorkerProcess]:
    """`python worker.py` with `kubeconfig`'s credentials, for the block."""
    worker = WorkerProcess(stack, kubeconfig, log)
    await worker.start()
    try:
        yield worker
    finally:
        await worker.stop()


async def record_emptied(stack: Stack, namespace: str, moments: list[float], stop: asyncio.Event) -> None:
    """Appends the wall-clock moment each time the namespace's last RayCluster starts being deleted, until
    `stop` is set, then samples once more (the workflow completes right after its last deletion)."""
    had_one = False
    while True:
        stopping = stop.is_set()
        clusters = store_list(stack, "ray.io/v1", "RayCluster", namespace)
        has_one = any(not cluster["metadata"].get("deletionTimestamp") for cluster in clusters)
        if had_one and not has_one:
            moments.append(time.time())
        had_one = has_one
        if stopping:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=0.05)


async def test_a_rayjob_survives_kill_9_of_its_worker(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger, tmp_path: Path
) -> None:
    stack, attempts = reliability_stack, sized(2, 3)
    recorded = figure("S1", f"kill -9 of the worker: RayJob, {attempts} failing attempts, DeleteCluster TTL")
    chooser = random.Random(SEED)
    runs = sized(1, 4)
    kills_per_run = sized(2, 5)  # 2 in `make test`: the incremental upgrade S1(a) has its own 2
    for run in range(runs):
        namespace = stack.namespace()
        kill_points = [round(chooser.uniform(0.5, sized(2.5, 5.0)), 2) for _ in range(kills_per_run)]
        recorded.notes.append(f"run {run}: kills {kill_points} s after each start")
        async with (
            worker_process(stack, worker_api.kubeconfig, tmp_path / f"worker-{run}.log") as worker,
            names_seen(stack, namespace) as clusters,
        ):
            started = await stack.client.start_workflow(
                "RayJobWorkflow", failing_rayjob(namespace, attempts),
                id=f"rayjob/{namespace}/killed", task_queue=worker.task_queue,
            )  # fmt: skip
            emptied: list[float] = []
            done = asyncio.Event()
            sampler = asyncio.create_task(record_emptied(stack, namespace, emptied, done))
            landed = 0
            for point in kill_points:
                await asyncio.sleep(point)
                if (await started.describe()).status != WorkflowExecutionStatus.RUNNING:
                    break  # the rest of the points fall after the end: no kill to count
                await worker.kill()
                landed += 1
                await worker.start()
            result = await asyncio.wait_for(started.result(), timeout=300)
            done.set()
            await sampler
        deleted_at = emptied[-1]
        await ledger.record(started)
        due = parse_time(result["endTime"]) + TTL_SECONDS
        left = leftovers(stack, namespace)
        end_state = (result["jobDeploymentStatus"], result["reason"], result.get("failed"))
        same = end_state == ("Failed", "AppFailed", attempts) and len(clusters) == attempts
        on_time = due - 0.05 <= deleted_at <= due + worker.down_seconds + DELETION_SLACK_SECONDS
        recorded.leaked += len([entry for entry in left if entry.startswith("RayCluster/")])
        recorded.leaked += max(0, len(clusters) - attempts)
        recorded.tried += landed
        survived = same and on_time and not any(entry.startswith("RayCluster/") for entry in left)
        recorded.survived += landed if survived else 0
        recorded.notes.append(f"run {run}: deleted {deleted_at - due:+.1f} s from endTime+TTL")
        assert end_state == ("Failed", "AppFailed", attempts), result
        assert len(clusters) == attempts, f"RayClusters created: {sorted(clusters)}"
        assert on_time, (
            f"deleted {deleted_at - due:+.2f} s from endTime + TTL; all emptied moments from it: "
            f"{[round(moment - due, 2) for moment in emptied]}; {result}; timers {await timers(started)}"
        )


async def timers(handle: Any) -> list[str]:
    """(when started, duration) of the workflow's timers, for failure messages."""
    found = []
    async for event in handle.fetch_history_events():
        if event.HasField("timer_started_event_attributes"):
            duration = event.timer_started_event_attributes.start_to_fire_timeout.ToSeconds()
            found.append(f"{event.event_time.ToJsonString()} +{duration}s")
    return found
