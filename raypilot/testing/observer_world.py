"""A fake cluster observer for RayJobWorkflow tests on the fake world: `observer.watch_job` (registered
under its real name) starts one task per watched Ray job that signals the workflow `observed` with the fake
dashboard's answer whenever it changes, as the real observer does after each list."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayjob_world import FakeWorld
from wire import names
from wire.observer import OBSERVED_SIGNAL, JobWatch, ObservedJob


class WatchTasks:
    """What a fake observer runs on the fake world: one task per watch, signalling its workflow as the real
    observer would (`signals_sent` counts the signals); `stop` ends them all."""

    def __init__(self, world: FakeWorld, client: Client) -> None:
        self.world = world
        self.client = client
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.signals_sent = 0

    async def stop(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


class FakeObserver(WatchTasks):
    def __init__(self, world: FakeWorld, client: Client, env: WorkflowEnvironment | None = None) -> None:
        """With a time-skipping `env`, the fake jobs follow the test server's clock and a job that must stay
        RUNNING makes the server skip to its end (nothing else would: the waiting workflow has no timer)."""
        super().__init__(world, client)
        self.env = env

    @activity.defn(name=names.WATCH_RAY_JOB)
    async def watch_job(self, request: JobWatch) -> bool:
        self.world.calls.append((names.WATCH_RAY_JOB, request))
        if request.submission_id not in self.tasks:
            self.tasks[request.submission_id] = asyncio.create_task(self._observe(request))
        return True

    async def _observe(self, request: JobWatch) -> None:
        handle = self.client.get_workflow_handle(request.workflow_id)
        sent = None
        tick = 0
        while True:
            tick += 1
            job = self.world.ray_jobs.get(request.submission_id)
            if job is not None and self.env is None:
                self.world._progress(job)
            elif job is not None and self.env is not None:
                now = await self.env.get_current_time()
                if (
                    job.running_since is not None
                    and not job.terminal
                    and now < job.running_since + job.duration
                ):
                    await self.env.sleep(job.running_since + job.duration - now)
                    now = await self.env.get_current_time()
                job.progress(now)
            answer = self.world.dashboard_answer(request.submission_id)
            if sent is None or answer.key() != sent.key():
                await handle.signal(OBSERVED_SIGNAL, ObservedJob(request.submission_id, answer, (1, 1, tick)))
                self.signals_sent += 1
                sent = answer
                if job is not None and answer.outcome == "found":
                    job.observed = job.index  # the fake job moves on once its step was seen
                if answer.terminal:
                    return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.world._changed.wait(), timeout=0.05)

    def activities(self) -> list[Callable[..., Any]]:
        return [*self.world.activities(), self.watch_job]
