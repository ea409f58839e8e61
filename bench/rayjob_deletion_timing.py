"""How exactly a RayJob's DeleteCluster rule fires: the RayCluster deletion seen by a watch vs endTime + TTL.

Runs RayJobs one after the other on an in-process stack (simulated sandbox, Temporal dev server, the real
worker and activities), each with one rule `DeleteCluster` on SUCCEEDED after TTL seconds, and prints for each
the lag between the moment a watch on RayClusters sees the deletion and `status.endTime + TTL`. The timer is
the same whatever the Ray mode, so the simulated dashboard keeps the run cheap.

    .venv/bin/python -m bench.rayjob_deletion_timing [--runs 5] [--ttl 3] [--record]

`--record` appends the summary line to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.binaries import temporal_cli
from tests.integration.rayjob_support import example, first_raycluster_deletion, parse_time
from tests.integration.stack import Stack, running_stack
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES

RESULTS = Path(__file__).with_name("RESULTS.md")


async def one_run(stack: Stack, ttl: int) -> float:
    """Lag in seconds between the observed RayCluster deletion and endTime + ttl for one RayJob."""
    namespace = stack.namespace()
    rules = [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": ttl}}]
    manifest = example(
        "rayjob-httpmode", namespace, entrypoint="echo hi", deletionStrategy={"deletionRules": rules}
    )
    seen = asyncio.create_task(asyncio.to_thread(first_raycluster_deletion, stack, namespace, within=120))
    handle = await stack.start(manifest)
    deleted_at = await seen
    result = await handle.result()
    return deleted_at - (parse_time(result["endTime"]) + ttl)


async def measure(runs: int, ttl: int) -> list[float]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(),
        data_converter=pydantic_data_converter,
        search_attributes=ALL_SEARCH_ATTRIBUTES,
        dev_server_log_level="error",
    )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-") as workdir:
            async with running_stack(Path(workdir), env.client, "simulated") as stack:
                lags = []
                for index in range(runs):
                    lag = await one_run(stack, ttl)
                    print(
                        f"run {index + 1}: RayCluster deletion observed {lag:+.3f} s after endTime + {ttl} s"
                    )
                    lags.append(lag)
                return lags
    finally:
        await env.shutdown()


def summary(lags: list[float], ttl: int) -> str:
    load = os.getloadavg()[0]
    return (
        f"| {datetime.now(UTC):%Y-%m-%d %H:%M} | rayjob_deletion_timing "
        f"| {len(lags)} runs, TTL {ttl} s, simulated "
        f"| lag after endTime+TTL: min {min(lags):+.3f} s, median {statistics.median(lags):+.3f} s, "
        f"max {max(lags):+.3f} s | load avg {load:.1f} on {os.cpu_count()} cores |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ttl", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="append the summary line to bench/RESULTS.md")
    options = parser.parse_args()
    lags = asyncio.run(measure(options.runs, options.ttl))
    line = summary(lags, options.ttl)
    print(line)
    if options.record:
        with RESULTS.open("a") as results:
            results.write(line + "\n")


if __name__ == "__main__":
    main()
