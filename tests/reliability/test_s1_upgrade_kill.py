"""S1(a): `kill -9` of the worker process at seeded random points of an incremental upgrade
(NewClusterWithIncrementalUpgrade) under load through the sandbox's Gateway controller, restarting it each
time.

Pass means the same end state as an undisturbed upgrade (v2 alone behind the HTTPRoute, exactly two
RayClusters ever, the same objects per kind as before the upgrade: nothing orphaned or duplicated) and not one
failed request, counted by a keep-alive client and a one-connection-per-request client on the Gateway.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.common import TypedSearchAttributes

from models.naming import workflow_id
from tests.integration.stack import Stack
from tests.reliability.conftest import WorkerApi
from tests.reliability.figures import FULL, SEED, figure, sized
from tests.reliability.ledger import Ledger
from tests.reliability.test_s1_worker_kill import WorkerProcess, worker_process
from tests.reliability.upgrade import upgrade_under_load

# make test's size took 45 s alone on an idle 2-core machine (184 s before a deletion stopped waiting for a
# lost wait's cancellation), and CI's runs are ~1.4x slower.
pytestmark = [pytest.mark.devserver, pytest.mark.timeout(1800 if FULL else 480)]


async def test_an_incremental_upgrade_under_load_survives_kill_9_of_its_worker(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger, tmp_path: Path
) -> None:
    stack = reliability_stack
    recorded = figure("S1", "kill -9 of the worker: incremental upgrade under load through the Gateway")
    recorded.failed_requests = 0
    chooser = random.Random(SEED + 1)
    runs, kills_per_run = sized(1, 5), sized(2, 4)
    requests = 0
    for run in range(runs):
        namespace = stack.namespace()
        kill_points = [round(chooser.uniform(0.2, 2.5), 2) for _ in range(kills_per_run)]
        landed: list[float] = []
        async with worker_process(stack, worker_api.kubeconfig, tmp_path / f"worker-{run}.log") as worker:

            async def start(
                manifest: dict[str, Any], worker: WorkerProcess = worker
            ) -> WorkflowHandle[Any, Any]:
                metadata = manifest["metadata"]
                return await stack.client.start_workflow(
                    "RayServiceWorkflow", manifest,
                    id=workflow_id("RayService", metadata["namespace"], metadata["name"]),
                    task_queue=worker.task_queue, execution_timeout=timedelta(minutes=30),
                    search_attributes=TypedSearchAttributes.empty,
                )  # fmt: skip

            async def kill_during_upgrade(
                handle: WorkflowHandle[Any, Any],
                upgrading: Callable[[], Awaitable[bool]],
                worker: WorkerProcess = worker,
                kill_points: list[float] = kill_points,
                landed: list[float] = landed,
            ) -> None:
                for point in kill_points:
                    await asyncio.sleep(point)
                    if not await upgrading():
                        return  # the rest of the points fall after the promotion: no kill to count
                    await worker.kill()
                    landed.append(point)
                    await worker.start()

            handle, outcome = await upgrade_under_load(stack, namespace, start, kill_during_upgrade)
            await handle.execute_update("delete")
            await handle.result()
        await ledger.record(handle)
        requests += outcome.requests
        recorded.tried += len(landed)
        recorded.leaked += len(outcome.leftover_difference()) + max(0, len(outcome.clusters_seen) - 2)
        recorded.failed_requests += len(outcome.failures)
        survived = outcome.same_end_state() and not outcome.failures
        recorded.survived += len(landed) if survived else 0
        recorded.notes.append(f"run {run}: kills {landed} s after the apply and each restart")
        assert outcome.same_end_state(), (outcome.leftover_difference(), outcome)
        assert not outcome.failures, outcome.failures[:20]
    recorded.notes.append(f"{requests} requests (2 keep-alive + 2 connection-per-request clients)")
    assert recorded.tried > 0, "no kill landed during an upgrade"
