"""`python -m bench.bare_worker`: P5's reference worker in a process of its own, as `worker.py` runs
raypilot's: the same workflow runner (raypilot/workflow_runner.py) and the same cap on workflow tasks at
once, with only `BenchBareLifecycle` and its no-op activity.

Reads TEMPORAL_ADDRESS and RAYPILOT_TASK_QUEUE; says "worker started" once it polls; runs until stopped.
"""

from __future__ import annotations

import asyncio
import os
import signal

from temporalio.client import Client

from bench.reference_workflows import BareLifecycle, noop
from raypilot.testing.worker import running_worker


async def serve() -> None:
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with running_worker(
        client,
        activities=[noop],
        workflows=[BareLifecycle],
        task_queue=os.environ["RAYPILOT_TASK_QUEUE"],
        replay_every_task=False,
    ):
        print("worker started", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(serve())
