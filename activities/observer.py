"""The cluster observer of Ray jobs (see `wire.observer`): registering a watch, and the one long-lived
activity per namespace that lists the jobs of each watched dashboard once per tick and signals each
watching RayJob workflow on a change.

Costs: one `GET /api/jobs/` per dashboard per tick whatever the number of jobs, one `watches` query per tick
(no history), one signal per job per change, a heartbeat every 6 s (`wire.observer.OBSERVER_HEARTBEAT_EVERY`:
a lost worker's attempt is retried on another within 20 s). A new activity of the observer (after a
continue-as-new, a retry) in the process of the one before takes the views that one delivered; elsewhere
(another worker) it starts with nothing sent, so its first list sends every watched job's view once: no
change is lost, and workflows drop the views they have already.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, Final

import httpx
from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from activities.dashboard import job_info_answer
from activities.dashboard_client import DashboardClient
from activities.observer_fanout import (
    ObserverHeartbeat,
    read_book,
    register_watch,
    signal_deliveries,
    unwatch_done,
)
from wire import stubs
from wire.dashboard import DashboardTarget, JobInfoAnswer
from wire.kubernetes_observer import KUBE_OBSERVER_WORKFLOW
from wire.observer import (
    OBSERVED_SIGNAL,
    OBSERVER_WORKFLOW,
    UNWATCH_KEYS_SIGNAL,
    WATCH_SIGNAL,
    WATCHES_QUERY,
    WORKER_STARTED_SIGNAL,
    Delivery,
    JobWatch,
    Listing,
    ObservedJob,
    ObserveJobs,
    WatchChanges,
    dashboards_to_list,
    deliveries,
    finished_watches,
    observer_shard,
    observer_shards_from_env,
    observer_workflow_id,
)
from wire.stubs.common import implements
from wire.watch_book import BookCopy

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

log = logging.getLogger(__name__)

LISTS_IN_FLIGHT: Final = 50


class ObserverActivities:
    def __init__(self, dependencies: ActivityDependencies, shards: int | None = None) -> None:
        self.dependencies = dependencies
        # How many observers share a namespace's clusters (RAYPILOT_OBSERVER_SHARDS, read once).
        self.shards = shards if shards is not None else observer_shards_from_env(os.environ)
        # The book of each observer's latest activity in this process, by observer workflow id (kept after
        # it ends: the next one may start before or after): the next activity of that observer here (after a
        # continue-as-new or a retry) carries over the views it sent.
        self.observing: dict[str, BookCopy[JobWatch, JobInfoAnswer]] = {}

    @implements(stubs.watch_job)
    async def watch_job(self, request: JobWatch) -> bool:
        """Signal-with-start of the dashboard's observer workflow: idempotent (one observer per id; a watch
        already there is unchanged). False on a worker without a Temporal client (some embedded or test
        workers): the RayJob then polls its job itself, as with RAYPILOT_JOB_OBSERVER=false."""
        namespace = request.target.namespace
        shard = observer_shard(request.target.head_service, self.shards)
        observer_id = observer_workflow_id(activity.info().task_queue, namespace, shard)
        client = self.dependencies.temporal_client
        return await register_watch(client, OBSERVER_WORKFLOW, namespace, observer_id, WATCH_SIGNAL, request)

    @implements(stubs.observe_jobs)
    async def observe_jobs(self, request: ObserveJobs) -> None:
        """Runs until cancelled (the observer workflow has no watch left) or the attempt's time is up (then
        retried at once, without a history event)."""
        client = self.dependencies.require_temporal_client()
        observer = client.get_workflow_handle(request.observer_id)
        dashboards: dict[str, DashboardClient] = {}
        attempt = activity.info().attempt
        book: BookCopy[JobWatch, JobInfoAnswer] = BookCopy(dict[str, JobWatch])
        previous = self.observing.get(request.observer_id)
        self.observing[request.observer_id] = book
        tick = 0
        async with ObserverHeartbeat() as heartbeat:
            while True:
                tick += 1
                if await read_book(book, observer, WATCHES_QUERY, WatchChanges, request.epoch_ms) is None:
                    return
                if previous is not None:
                    book.carry_sent_from(previous)
                    previous = None
                if book.watches:
                    listings = await self._list_all(dashboards, dashboards_to_list(book.watches))
                    version = (request.epoch_ms, attempt, tick)
                    await self._deliver(client, observer, book.watches, listings, book.sent, version)
                heartbeat.note({"watches": len(book.watches), "dashboards": len(dashboards), "tick": tick})
                await asyncio.sleep(request.tick_seconds)

    async def _list_all(
        self, dashboards: dict[str, DashboardClient], targets: dict[str, DashboardTarget]
    ) -> dict[str, Listing]:
        """One list per watched dashboard, at most `LISTS_IN_FLIGHT` at once. A dashboard's client (its Ray
        token read once) is kept while the dashboard is watched."""
        for gone in [service for service in dashboards if service not in targets]:
            del dashboards[gone]
        gate = asyncio.Semaphore(LISTS_IN_FLIGHT)

        async def one(service: str, target: DashboardTarget) -> tuple[str, Listing]:
            async with gate:
                try:
                    if service not in dashboards:
                        dashboards[service] = await DashboardClient.open(self.dependencies, target)
                except ApplicationError as error:  # e.g. the auth token's Secret does not exist yet
                    return service, Listing(None, JobInfoAnswer("unavailable", error=error.message))
                return service, await list_jobs(dashboards[service])

        return dict(await asyncio.gather(*(one(service, target) for service, target in targets.items())))

    async def _deliver(
        self,
        client: Client,
        observer: WorkflowHandle[Any, Any],
        watches: dict[str, JobWatch],
        listings: dict[str, Listing],
        sent: dict[str, JobInfoAnswer],
        version: tuple[int, int, int],
    ) -> None:
        def delivered(delivery: Delivery) -> bool:
            sent[delivery.key] = delivery.answer
            return False  # a terminal view ends the watch: found below, with those delivered before

        gone = await signal_deliveries(
            client,
            deliveries(watches, listings, sent),
            OBSERVED_SIGNAL,
            lambda delivery: ObservedJob(delivery.submission_id, delivery.answer, version),
            delivered,
        )
        # Forget watches whose workflow is gone or whose job ended (delivered terminal).
        finished = finished_watches({key: sent[key] for key in sent if key in watches})
        await unwatch_done(observer, watches, [*gone, *finished], UNWATCH_KEYS_SIGNAL)


async def restart_observers(client: Client, task_queue: str, identity: str) -> int:
    """Tells every running observer of `task_queue` (Ray job and Kubernetes observers) that a worker started
    (`worker-started`): each restarts its activity, which a killed worker may have held (found otherwise only
    when its heartbeat times out, minutes later). Called once when a worker starts; returns how many observers
    were told. Best effort: a server without visibility, or an observer that just ended, is skipped."""
    types = " OR ".join(f"WorkflowType = '{kind}'" for kind in (OBSERVER_WORKFLOW, KUBE_OBSERVER_WORKFLOW))
    query = f"({types}) AND ExecutionStatus = 'Running' AND TaskQueue = '{task_queue}'"
    told = 0
    try:
        async for execution in client.list_workflows(query):
            with contextlib.suppress(RPCError):
                await client.get_workflow_handle(execution.id).signal(WORKER_STARTED_SIGNAL, identity)
                told += 1
    except RPCError as error:
        log.warning("could not list the observers of %s: %s", task_queue, error)
    return told


async def list_jobs(dashboard: DashboardClient) -> Listing:
    """GET /api/jobs/ by submission id; no jobs (and why) when the dashboard did not answer with a list."""
    try:
        response = await dashboard.request("GET", "/api/jobs/")
    except httpx.HTTPError as exc:
        error = dashboard.redact(f"GetJobInfo fail: {type(exc).__name__}: {exc}")
        return Listing(None, JobInfoAnswer("unavailable", error=error))
    if not response.is_success:
        error = dashboard.redact(f"GetJobInfo fail: HTTP {response.status_code}: {response.text[:300]}")
        return Listing(None, JobInfoAnswer("unavailable", error=error))
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if not isinstance(body, list):
        error = dashboard.redact(f"GetJobInfo fail: {str(body)[:300]}")
        return Listing(None, JobInfoAnswer("unavailable", error=error))
    listed: dict[str, JobInfoAnswer] = {}
    for details in body:
        submission_id = details.get("submission_id") if isinstance(details, dict) else None
        if isinstance(submission_id, str) and submission_id:
            listed[submission_id] = job_info_answer(details)
    return Listing(listed)
