"""P5: RayJob lifecycles per second through one worker on the dev server, beside bare Temporal.

Ours: K HTTPMode RayJobs started together on the simulated sandbox (fast timings), each a whole
lifecycle: cluster created and ready, Ray job submitted and watched to SUCCEEDED, cluster deleted
(shutdownAfterJobFinishes); rate = K / (last result - first start).

Reference, same server, same run, same worker settings: `BenchBareLifecycle`, a workflow that runs as
many no-op activities and local activities, one after the other, as a RayJob lifecycle had in its history.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from temporalio.client import Client, WorkflowHandle

from bench.arithmetic import Figure, event_kind, ratio
from bench.progress import Progress
from bench.reference_workflows import BareLifecycle, noop
from bench.suite import BenchContext
from raypilot.testing.worker import running_worker
from tests.integration.rayjob_support import example
from tests.integration.stack import Stack, running_stack

RATIO_TARGET = 0.7


async def timed(label: str, starts: list[Any]) -> float:
    """Start every workflow at once, await every result; returns the wall time of the whole batch."""
    began = time.monotonic()
    with Progress(label, len(starts)) as bar:
        handles: list[WorkflowHandle[Any, Any]] = await asyncio.gather(*starts)

        async def finish(handle: WorkflowHandle[Any, Any]) -> None:
            await handle.result()
            bar.advance()

        await asyncio.gather(*(finish(handle) for handle in handles))
    return time.monotonic() - began


def activity_counts(events: list[dict[str, Any]]) -> tuple[int, int]:
    """(ordinary activities, local activities) of a history."""
    kinds = [event_kind(event) for event in events]
    return kinds.count("activitytaskscheduled"), kinds.count("markerrecorded")


async def ours(stack: Stack, count: int) -> tuple[float, tuple[int, int]]:
    namespace = stack.namespace()
    manifests = [
        example(
            "rayjob-httpmode",
            namespace,
            rename=f"p5-{index}",
            entrypoint="echo hi",
            shutdownAfterJobFinishes=True,
        )
        for index in range(count)
    ]
    took = await timed("P5 RayJob lifecycles", [stack.start(manifest) for manifest in manifests])
    handle = stack.client.get_workflow_handle(f"rayjob/{namespace}/p5-0")
    events = (await handle.fetch_history()).to_json_dict()["events"]
    return took, activity_counts(events)


async def bare(client: Client, count: int, activities: int, local_activities: int) -> float:
    async with running_worker(
        client, activities=[noop], workflows=[BareLifecycle], replay_every_task=False
    ) as queue:
        starts = [
            client.start_workflow(
                "BenchBareLifecycle",
                args=[activities, local_activities],
                id=f"bare-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )
            for _ in range(count)
        ]
        return await timed("P5 bare workflows", starts)


async def run(context: BenchContext) -> list[Figure]:
    count = 2 if context.smoke else 20
    async with running_stack(context.scratch("p5-sandbox"), context.client, "simulated") as stack:
        ours_s, (activities, local_activities) = await ours(stack, count)
    bare_s = await bare(context.client, count, activities, local_activities)
    ours_rate, bare_rate = count / ours_s, count / bare_s
    return [
        Figure(
            "P5",
            f"RayJob lifecycles/s, {count} at once, one worker",
            f"{ours_rate:.2f}/s ({activities} activities + {local_activities} local per lifecycle)",
            f"bare Temporal, same activities: {bare_rate:.2f}/s; ratio {ratio(ours_rate, bare_rate):.2f}",
            ">= 0.7 of bare",
            ratio(ours_rate, bare_rate) >= RATIO_TARGET,
        )
    ]
