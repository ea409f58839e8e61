"""When the worker running an observer's activity dies and no worker starts (one of two workers killed), the
server retries the activity once its heartbeat times out, and another worker runs it: that timeout is how
long the dead worker's observers stay silent. The brief's bound is 30 s (P10 measures it on the real stack).

Time-skipping test server, fake observer activities: the first attempt stands for an activity on a worker
that was killed (it never heartbeats again and never returns); the second attempt must start within 30 s of
workflow time. The observer's own heartbeat (`ObserverHeartbeat`) beats while a round is held up, so a busy
worker is never taken for a dead one.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio import activity
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.observer_fanout import ObserverHeartbeat
from tests.workflows.observer.observer_support import OBSERVERS, FakeWorker, start_observer
from wire.kubernetes_observer import ObserveKubernetes
from wire.observer import ObserveJobs

RECOVERY_BOUND = timedelta(seconds=30)


# Slow: the lost attempt stays in flight, which holds the test server's clock, so its 30 s pass in real time.
@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(OBSERVERS))
async def test_a_dead_workers_observer_runs_again_within_30_s_though_no_worker_starts(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker, kind: str
) -> None:
    observer = OBSERVERS[kind]
    client = time_skipping_env.client
    first_started, released = asyncio.Event(), asyncio.Event()

    @activity.defn(name=observer.activity_name)
    async def observe(request: ObserveJobs | ObserveKubernetes) -> None:
        if activity.info().attempt == 1:
            first_started.set()
            # The killed worker's attempt: no heartbeat, no answer, ever (released at the test's end).
            await released.wait()
            return
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.05)

    async with fake_worker(client, workflows=[observer.workflow], activities=[observe]) as queue:
        handle = await start_observer(client, observer, queue)
        try:
            await first_started.wait()
            await time_skipping_env.sleep(RECOVERY_BOUND)
            # The server's own account: the lost attempt timed out and the next one is under way.
            [pending] = (await handle.describe()).raw_description.pending_activities
            assert pending.attempt == 2
        finally:
            released.set()
            await handle.terminate("test over")


async def test_the_observer_heartbeat_beats_while_a_round_is_held_up() -> None:
    env = ActivityEnvironment()
    beats: list[tuple[object, ...]] = []
    three_beats = asyncio.Event()

    def on_heartbeat(*details: object) -> None:
        beats.append(details)
        if len(beats) >= 3:
            three_beats.set()

    env.on_heartbeat = on_heartbeat

    async def observe() -> None:
        async with ObserverHeartbeat(period_s=0.01) as heartbeat:
            heartbeat.note({"watches": 2000})
            await three_beats.wait()  # a round that does not come back (thousands of signals, say)

    await asyncio.wait_for(env.run(observe), timeout=30)
    assert beats[:3] == [({"watches": 2000},)] * 3
