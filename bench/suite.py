"""`make bench`: every speed and cost figure of raypilot beside its reference, measured in the same run.

    .venv/bin/python -m bench [--only P1,P3] [--smoke] [--scale 100,1000] [--temporal postgres] [--record]

Each bench is a module `bench.pN_*` with `async def run(context) -> list[Figure]`. The suite starts one
Temporal server for all of them (the dev server; with `--temporal postgres` the Temporal server as production
runs one, on PostgreSQL: sandbox/temporalserver, built by `make temporal-server`), runs them one after the
other (P6, the only one on real Ray, last), prints one table and, with `--record`, appends it to
bench/RESULTS.md with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bench.arithmetic import Figure, markdown_table
from raypilot.testing.binaries import temporal_cli
from sandbox.temporalserver import temporal_on_postgres
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES

RESULTS = Path(__file__).with_name("RESULTS.md")
BENCHES: dict[str, str] = {
    "P0": "bench.p0_stack_idle",
    "P1": "bench.p1_incremental",
    "P2": "bench.p2_deletion",
    "P2K": "bench.p2_kuberay",
    "P3": "bench.p3_detection",
    "P3K": "bench.p3_kuberay",
    "P4": "bench.p4_history",
    "P5": "bench.p5_throughput",
    "P7": "bench.p7_scale",
    "P7K": "bench.p7_kuberay",
    "P8": "bench.p8_own_clusters",
    "P9": "bench.p9_activations",
    "P10": "bench.p10_workers",
    "P6": "bench.p6_serve_real",  # real Ray: last, on the machine as the others left it
}
DEFAULT_SCALE = (100, 1000)
# P8's RayJobs with a RayCluster each: each cluster is a head Pod, a local process of simulated Ray.
DEFAULT_CLUSTERS = (20, 50, 100)
T = TypeVar("T")


@dataclass
class BenchContext:
    """What a bench gets: the Temporal server's client and address, a scratch directory, and how big to run.
    `server_pid` is the server's process where the suite knows it (Temporal on PostgreSQL, whose
    PostgreSQL's postmaster is `database_pid`; the dev server's is looked up by its address). `shared` holds
    what several benches of one run use (bench/realkube_stack.py), `resources` stops it when the run ends."""

    client: Client
    address: str
    workdir: Path
    smoke: bool = False
    scale: Sequence[int] = DEFAULT_SCALE
    clusters: Sequence[int] = DEFAULT_CLUSTERS
    log: Callable[[str], None] = print
    loads: list[float] = field(default_factory=list)
    shared: dict[str, object] = field(default_factory=dict)
    resources: AsyncExitStack = field(default_factory=AsyncExitStack)
    server_pid: int | None = None
    database_pid: int | None = None

    def scratch(self, name: str) -> Path:
        path = self.workdir / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    async def in_turn(self, *runs: Callable[[], Awaitable[T]]) -> list[T]:
        """Each of `runs` after the previous one, so that each meets the machine as the previous left it; in a
        smoke, whose figures nobody reads, all at once (each run's own namespace and objects keep them apart),
        so that `make test` waits for the slowest run only."""
        if self.smoke:
            return list(await asyncio.gather(*(run() for run in runs)))
        return [await run() for run in runs]


Bench = Callable[[BenchContext], Awaitable[list[Figure]]]


def bench_of(bench_id: str) -> Bench:
    module = importlib.import_module(BENCHES[bench_id])
    run: Bench = module.run
    return run


async def run_benches(context: BenchContext, ids: Sequence[str]) -> list[Figure]:
    """Each bench in turn; a bench that fails shows as one MISSED row with its error, the others still run.
    What the benches shared is stopped at the end."""
    async with context.resources:
        return await _each_bench(context, ids)


async def _each_bench(context: BenchContext, ids: Sequence[str]) -> list[Figure]:
    figures: list[Figure] = []
    for bench_id in ids:
        started = time.monotonic()
        context.log(f"== {bench_id} ({BENCHES[bench_id]})")
        try:
            figures.extend(await bench_of(bench_id)(context))
        except Exception as error:
            if context.smoke:
                raise
            traceback.print_exc()
            failure = f"{type(error).__name__}: {error}"
            figures.append(Figure(bench_id, "(bench failed)", failure, "", "", False))
        load = os.getloadavg()[0]
        context.loads.append(load)
        context.log(f"   {bench_id} took {time.monotonic() - started:.0f} s, load avg {load:.1f}")
    return figures


async def start_dev_server() -> WorkflowEnvironment:
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(),
        data_converter=pydantic_data_converter,
        search_attributes=ALL_SEARCH_ATTRIBUTES,
        dev_server_log_level="error",
    )


def dev_server_address(env: WorkflowEnvironment) -> str:
    return str(env.client.service_client.config.target_host)


def record_text(figures: Sequence[Figure], ids: Sequence[str], loads: Sequence[float], note: str) -> str:
    """The section `--record` appends to RESULTS.md."""
    low, high = (min(loads), max(loads)) if loads else (0.0, 0.0)
    notes = [f"- {row.id}: {text}" for row in figures for text in row.notes]
    return "\n".join(
        [
            "",
            f"## make bench, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC ({', '.join(ids)}{note})",
            "",
            f"Machine: load average {low:.1f}-{high:.1f} (1 min, sampled after each bench) on "
            f"{os.cpu_count()} cores, the bench's own stack and processes included.",
            "",
            markdown_table(figures),
            *(["", *notes] if notes else []),
            "",
        ]
    )


async def main_async(options: argparse.Namespace) -> list[Figure]:
    ids = [item.strip().upper() for item in options.only.split(",")] if options.only else list(BENCHES)
    unknown = [item for item in ids if item not in BENCHES]
    if unknown:
        raise SystemExit(f"unknown bench {unknown}; known: {', '.join(BENCHES)}")
    ids = [bench_id for bench_id in BENCHES if bench_id in ids]  # P6 stays last
    scale = tuple(int(n) for n in options.scale.split(",")) if options.scale else DEFAULT_SCALE
    clusters = tuple(int(n) for n in options.clusters.split(",")) if options.clusters else DEFAULT_CLUSTERS
    with tempfile.TemporaryDirectory(prefix="raypilot-bench-") as workdir:
        async with AsyncExitStack() as servers:
            if options.temporal == "postgres":
                names = [key.name for key in ALL_SEARCH_ATTRIBUTES]
                on_postgres = temporal_on_postgres(Path(workdir) / "temporal", search_attributes=names)
                server = await servers.enter_async_context(on_postgres)
                client = await Client.connect(
                    server.address, namespace=server.namespace, data_converter=pydantic_data_converter
                )
                address, server_pid, database = server.address, server.server_pid, server.postgres_pid
            else:
                env = await start_dev_server()
                servers.push_async_callback(env.shutdown)
                client, address, server_pid, database = env.client, dev_server_address(env), None, None
            context = BenchContext(
                client,
                address,
                Path(workdir),
                smoke=options.smoke,
                scale=scale,
                clusters=clusters,
                server_pid=server_pid,
                database_pid=database,
            )
            figures = await run_benches(context, ids)
    table = markdown_table(figures)
    print()
    print(table)
    for row in figures:
        for text in row.notes:
            print(f"  {row.id}: {text}")
    if options.record:
        note = (", smoke" if options.smoke else "") + (
            ", Temporal on PostgreSQL" if options.temporal == "postgres" else ""
        )
        with RESULTS.open("a") as results:
            results.write(record_text(figures, ids, context.loads, note))
        print(f"appended to {RESULTS}")
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated bench ids, e.g. P1,P3 (default: all)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every bench runs")
    parser.add_argument("--scale", default="", help="P7's numbers of running RayJobs, e.g. 100,1000,10000")
    parser.add_argument(
        "--clusters", default="", help="P8's numbers of RayJobs with a cluster each, e.g. 20,50"
    )
    parser.add_argument(
        "--temporal",
        choices=("dev", "postgres"),
        default="dev",
        help="the server: the dev server, or the Temporal server on PostgreSQL (make temporal-server first)",
    )
    parser.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    # The fake waits of P4 end with a retryable "nothing changed yet" by design; the worker logs each one.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)
    logging.getLogger("temporalio.worker._activity").setLevel(logging.ERROR)
    # The sandbox's TCP proxies log their connection tasks cancelled at shutdown (asyncio's stream callback
    # asks a cancelled task for its exception): noise at the end of each bench, not a result.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    asyncio.run(main_async(options))
