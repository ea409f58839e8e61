"""The references the suite runs beside raypilot, as Temporal workflows (a module of its own: the workflow
sandbox imports it, so it imports nothing else of the bench).

- `BenchKubeRayTickLoop` (P4/P4b): a reconcile loop at KubeRay's cadence, observe with an activity, then
  sleep one tick. Its activity does nothing, so its history and action counts are a lower bound for a
  KubeRay-style workflow.
- `BenchBareLifecycle` (P5): as many no-op activities and local activities, one after the other, as a
  RayJob lifecycle runs: bare Temporal's speed on the same server and worker.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

OBSERVE = "bench.observe"
NOOP = "bench.noop"


@activity.defn(name=OBSERVE)
async def observe() -> None:
    """One reconcile's read (a no-op here)."""


@activity.defn(name=NOOP)
async def noop() -> None:
    """Does nothing: the bare workflow's activity."""


@workflow.defn(name="BenchKubeRayTickLoop")
class KubeRayTickLoop:
    @workflow.run
    async def run(self, ticks: int, tick_s: float) -> int:
        for _ in range(ticks):
            await workflow.execute_activity(OBSERVE, start_to_close_timeout=timedelta(seconds=30))
            await workflow.sleep(timedelta(seconds=tick_s))
        return ticks


@workflow.defn(name="BenchBareLifecycle")
class BareLifecycle:
    @workflow.run
    async def run(self, activities: int, local_activities: int) -> None:
        for _ in range(local_activities):
            await workflow.execute_local_activity(NOOP, start_to_close_timeout=timedelta(seconds=30))
        for _ in range(activities):
            await workflow.execute_activity(NOOP, start_to_close_timeout=timedelta(seconds=30))
