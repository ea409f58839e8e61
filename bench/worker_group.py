"""P10's workers: W processes of `worker.py` on one task queue (each as P7's worker: its own process,
raypilot's ServiceAccount, its SDK metrics), what each of them costs and runs, which of them holds the
observers' activities, and a kill -9 of one of them.

A worker's Temporal identity is the SDK's default, `<pid>@<host>`: the histories' WorkflowTaskCompleted
events and an observer's pending activity name it, so what each worker ran is read from Temporal itself.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from bench.arithmetic import event_kind
from bench.jobs_support import SharedCluster, WorkerProcess, sample_process
from bench.suite import BenchContext
from wire.kubernetes_observer import KUBE_OBSERVER_WORKFLOW
from wire.observer import OBSERVER_WORKFLOW

HISTORIES_IN_FLIGHT = 16


def worker_identity(pid: int, host: str | None = None) -> str:
    """The SDK's default client identity of the worker process `pid`."""
    return f"{pid}@{host if host is not None else socket.gethostname()}"


def task_identities(events: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Workflow tasks completed per worker identity in one history (JSON events)."""
    found: Counter[str] = Counter()
    for event in events:
        if event_kind(event) == "workflowtaskcompleted":
            identity = event.get("workflowTaskCompletedEventAttributes", {}).get("identity")
            if identity:
                found[str(identity)] += 1
    return found


def jobs_per_worker(histories: Iterable[Counter[str]], identities: Sequence[str]) -> list[int]:
    """For each worker (by identity, in order) how many of the jobs had at least one workflow task run by it;
    a job run by two workers counts for both."""
    counts = [0] * len(identities)
    for tasks in histories:
        for index, identity in enumerate(identities):
            if tasks.get(identity, 0) > 0:
                counts[index] += 1
    return counts


@dataclass(frozen=True)
class ObserverHold:
    """An observer workflow's activity: which worker last started it (its identity), the attempt."""

    workflow_id: str
    workflow_type: str
    identity: str
    attempt: int


@dataclass
class WorkerGroup:
    workers: list[WorkerProcess]
    identities: list[str]
    cpu_at_start: list[float]

    @property
    def pids(self) -> list[int]:
        return [worker.pid for worker in self.workers]

    def alive(self) -> list[int]:
        """The indexes of the workers still running."""
        return [index for index, worker in enumerate(self.workers) if worker.process.poll() is None]

    async def workflow_tasks_run(self) -> int | None:
        """Workflow tasks run so far by the live workers together (P7's settle reads this)."""
        counts = [await self.workers[index].workflow_tasks_run() for index in self.alive()]
        known = [count for count in counts if count is not None]
        return sum(known) if known else None

    async def tasks_each(self) -> list[int | None]:
        return [
            await worker.workflow_tasks_run() if index in self.alive() else None
            for index, worker in enumerate(self.workers)
        ]

    def cpu_seconds_each(self) -> list[float | None]:
        """CPU seconds each worker used since it started (None: no longer running)."""
        alive = self.alive()
        return [
            sample_process(worker.pid).cpu_seconds - start if index in alive else None
            for index, (worker, start) in enumerate(zip(self.workers, self.cpu_at_start, strict=True))
        ]

    def index_of(self, identity: str) -> int | None:
        return self.identities.index(identity) if identity in self.identities else None

    async def kill(self, index: int) -> float:
        """kill -9 of worker `index`; returns the moment (time.monotonic()) it was sent."""
        process = self.workers[index].process
        process.kill()
        killed_at = time.monotonic()
        await asyncio.to_thread(process.wait)
        return killed_at


@asynccontextmanager
async def worker_group(
    context: BenchContext, shared: SharedCluster, task_queue: str, count: int, label: str
) -> AsyncIterator[WorkerGroup]:
    """`count` workers of `task_queue`, each in its own process, stopped by PID at the end."""
    async with AsyncExitStack() as stack:
        workers: list[WorkerProcess] = []
        for index in range(count):
            log_path = context.scratch("p10") / f"{label}-worker-{index}.log"
            workers.append(await stack.enter_async_context(shared.worker(context, task_queue, log_path)))
        yield WorkerGroup(
            workers,
            [worker_identity(worker.pid) for worker in workers],
            [sample_process(worker.pid).cpu_seconds for worker in workers],
        )


async def observer_holds(client: Client, task_queue: str) -> list[ObserverHold]:
    """The running observers of `task_queue` and the worker that last started each one's activity."""
    kinds = " OR ".join(f"WorkflowType = '{kind}'" for kind in (OBSERVER_WORKFLOW, KUBE_OBSERVER_WORKFLOW))
    query = f"({kinds}) AND ExecutionStatus = 'Running' AND TaskQueue = '{task_queue}'"
    holds: list[ObserverHold] = []
    async for execution in client.list_workflows(query):
        try:
            description = await client.get_workflow_handle(execution.id).describe()
        except RPCError:
            continue  # ended meanwhile
        for pending in description.raw_description.pending_activities:
            holds.append(
                ObserverHold(
                    execution.id, execution.workflow_type, pending.last_worker_identity, pending.attempt
                )
            )
    return holds


async def task_identities_of(handles: Sequence[WorkflowHandle[Any, Any]]) -> list[Counter[str]]:
    """Each workflow's workflow tasks per worker identity, from its history."""
    gate = asyncio.Semaphore(HISTORIES_IN_FLIGHT)

    async def one(handle: WorkflowHandle[Any, Any]) -> Counter[str]:
        async with gate:
            history = await handle.fetch_history()
        return task_identities(history.to_json_dict()["events"])

    return list(await asyncio.gather(*(one(handle) for handle in handles)))


async def observer_runs(client: Client, task_queue: str) -> int:
    """How many runs the Ray job observers of `task_queue` had (each continue-as-new is one more)."""
    query = f"WorkflowType = '{OBSERVER_WORKFLOW}' AND TaskQueue = '{task_queue}'"
    return sum([1 async for _ in client.list_workflows(query)])


def signals_named(events: Iterable[Mapping[str, Any]], name: str) -> int:
    """How many signals called `name` a history holds."""
    return sum(
        1
        for event in events
        if event_kind(event) == "workflowexecutionsignaled"
        and event.get("workflowExecutionSignaledEventAttributes", {}).get("signalName") == name
    )
