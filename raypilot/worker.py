"""The raypilot worker: every workflow and activity, on the task queue of docs/contract.md §2.

Run it as `python worker.py` or `raypilot worker`. It registers the search attributes of docs/contract.md §4
when they are missing, serves SDK metrics on RAYPILOT_METRICS_PORT when set, and shuts down cleanly on
SIGINT/SIGTERM (running activities get a grace period to finish or heartbeat their progress).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio.worker import Worker

from activities.metrics import ActivityErrorMetrics
from activities.observer import restart_observers
from activities.registry import ActivityDependencies, build_activities, dashboard_access_from_env
from models.operator import operator_config_from_env
from raypilot.ast_parsing import serialize_ast_parsing
from raypilot.logs import configure_logging
from raypilot.metrics import collect_phase_gauges
from raypilot.nexus.handlers import nexus_handler_from_env
from raypilot.search_attributes import ensure_search_attributes
from raypilot.settings import SettingsError, TemporalSettings, connect_with_retry, make_runtime
from raypilot.tracing import shutdown_tracing, worker_interceptors
from raypilot.versioning import deployment_config_from_env
from raypilot.workflow_runner import MAX_CONCURRENT_WORKFLOW_TASKS, workflow_runner
from wire.observer import observer_shards_from_env
from workflows.registry import WORKFLOWS

log = logging.getLogger("raypilot.worker")

MAX_CONCURRENT_ACTIVITIES = 100
GRACEFUL_SHUTDOWN = timedelta(seconds=30)
# A wait learns that the workflow cancelled it (an `apply`, `delete` or upgrade control changed the desired
# state) only when one of its heartbeats reaches the server. The SDK sends them at most every 0.8 x the
# heartbeat timeout (24 s for the waits' 30 s); capping that at 2 s lets handlers act within seconds.
# Heartbeats are RPCs, not history events, so this costs no Temporal actions.
MAX_HEARTBEAT_THROTTLE = timedelta(seconds=2)


async def run_worker(settings: TemporalSettings, stop: asyncio.Event) -> None:
    runtime = make_runtime(settings)
    client = await connect_with_retry(settings, runtime)
    await ensure_search_attributes(client, settings.namespace)
    # The state gauges only where someone scrapes them (RAYPILOT_METRICS_PORT).
    gauges: asyncio.Task[None] | None = None
    if runtime is not None:
        gauges = asyncio.create_task(collect_phase_gauges(client, runtime.metric_meter))
    dependencies = ActivityDependencies.from_env(temporal_client=client)
    deployment = deployment_config_from_env(os.environ)
    # Kubernetes client calls block, so synchronous activities run on threads: one per activity slot.
    with ThreadPoolExecutor(max_workers=MAX_CONCURRENT_ACTIVITIES) as executor:
        try:
            async with Worker(
                client,
                task_queue=settings.task_queue,
                workflows=WORKFLOWS,
                workflow_runner=workflow_runner(),
                max_concurrent_workflow_tasks=MAX_CONCURRENT_WORKFLOW_TASKS,
                activities=build_activities(dependencies),
                # The Nexus service `raypilot` (docs/contract.md §9), starting workflows on this task queue.
                nexus_service_handlers=[nexus_handler_from_env(settings.task_queue)],
                interceptors=[ActivityErrorMetrics(), *worker_interceptors(settings.otel)],
                activity_executor=executor,
                max_concurrent_activities=MAX_CONCURRENT_ACTIVITIES,
                graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
                max_heartbeat_throttle_interval=MAX_HEARTBEAT_THROTTLE,
                default_heartbeat_throttle_interval=MAX_HEARTBEAT_THROTTLE,
                deployment_config=deployment,
            ):
                log.info(
                    "worker started: address=%s namespace=%s task_queue=%s version=%s",
                    settings.address,
                    settings.namespace,
                    settings.task_queue,
                    deployment.version.to_canonical_string() if deployment is not None else "unversioned",
                )
                # The observers' activities (Ray job and Kubernetes) move to the workers there are now (a
                # killed worker's would otherwise wait for its heartbeat timeout).
                told = await restart_observers(client, settings.task_queue, client.identity)
                log.info("observers told of this worker: %d", told)
                await stop.wait()
                log.info("shutting down")
        finally:
            if gauges is not None:
                gauges.cancel()
            shutdown_tracing()
            await dependencies.aclose()


def freeze_startup_heap() -> None:
    """Keeps what start-up made (about 100,000 objects: the SDK, pydantic's schemas, the Kubernetes client)
    out of every later full garbage collection. A full collection stops every thread, a workflow activation's
    too, and Temporal fails an activation that has not yielded within 2 s; its cost grows with the objects it
    scans, and a CPU-throttled pod multiplies it (test processes of 500,000-700,000 objects logged 0.4-3.2 s
    pauses under load, tests/stalls.py)."""
    gc.collect()
    gc.freeze()


def main() -> int:
    serialize_ast_parsing()
    try:
        configure_logging(os.environ)
    except ValueError as err:  # RAYPILOT_LOG_FORMAT names no format: say so in the default one
        logging.basicConfig(level=logging.INFO)
        log.error("%s", err)
        return 2
    # httpx logs every request at INFO: one line per dashboard poll would drown the worker's own log.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        settings = TemporalSettings.from_env()
        settings.tls_config()
        # Fail at start, not in every workflow or activity, when a setting has a typo.
        operator_config_from_env(os.environ)
        dashboard_access_from_env(os.environ)
        observer_shards_from_env(os.environ)
        deployment_config_from_env(os.environ)
    except (SettingsError, ValueError) as err:
        log.error("%s", err)
        return 2
    freeze_startup_heap()

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await run_worker(settings, stop)

    try:
        asyncio.run(serve())
    except SettingsError as err:
        log.error("%s", err)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
