"""`raypilot logs rayjob/NAMESPACE/NAME [--follow]` (docs/contract.md §9, docs/logs.md): a driver log.

Where it comes from, first that has it:
1. its RayCluster's dashboard while the cluster exists (`GET /api/jobs/<id>/logs`), reached as the worker
   reaches it (`RAYPILOT_DASHBOARD_ACCESS`: directly, or through the API server's service proxy with the
   kubeconfig's credentials), the cluster found by the name in the RayJob's status;
2. after teardown, the log store (`RAYPILOT_LOG_STORE`, as the worker has it): the full log of an ended
   attempt, at `<namespace>/<name>/<submission id>.log`;
3. else the last lines saved in the status (condition DriverLogSaved);
4. else a message saying that nothing was kept, and why.

`--follow` polls the logs endpoint once a second and prints what was added since, until the Ray job is
terminal (then once more, for its last lines). It polls rather than opening Ray's `/logs/tail` websocket:
the same authenticated request works directly and through the API server's proxy, with no websocket client
among raypilot's dependencies; the price is reading the log again each second, which a person watching it
does not notice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from activities.dashboard import fetch_job_info, json_object
from activities.dashboard_client import DashboardClient
from activities.dependencies import ActivityDependencies
from activities.kubernetes.resources import RAYCLUSTER
from activities.log_store import LOG_STORE_ENV, LogStore, LogStoreError, log_store_from_env
from models.meta import Condition, ObjectMeta, find_condition
from models.naming import ObjectRef
from models.raycluster import RayClusterSpec
from models.rayjob import RayJob, RayJobStatus
from raypilot.cli.common import Console, client_for, parse_ref, ref_id, settings_from
from raypilot.cli.status import observe
from raypilot.runs.errors import CommandError, rejected
from raypilot.runs.lookup import describe_ref
from wire.dashboard import DashboardTarget
from wire.driver_log import log_store_key
from workflows.decisions.rayjob.dashboard import dashboard_target
from workflows.decisions.rayjob.driver_log import DRIVER_LOG_CONDITION, saved_tail

FOLLOW_SECONDS: Final = 1.0


@dataclass(frozen=True)
class LiveJob:
    """A RayJob's Ray job on a dashboard that answers."""

    client: DashboardClient
    submission_id: str


async def show_logs(ref_text: str, console: Console, *, follow: bool) -> int:
    ref = parse_ref(ref_text)
    if ref.kind != "RayJob":
        raise rejected("logs prints a RayJob's driver log: rayjob/NAMESPACE/NAME")
    settings = settings_from(console)
    client = await client_for(console)
    observed = await observe(ref, client.get_workflow_handle(ref_id(ref)), settings.task_queue)
    dependencies = ActivityDependencies.from_env(console.env)
    try:
        store = _store(console.env, dependencies.http)
        return await print_logs(
            ref, observed.status, dependencies, store, console, follow=follow and not observed.completed
        )
    finally:
        await dependencies.aclose()


def _store(env: Mapping[str, str], http: httpx.AsyncClient) -> LogStore | None:
    try:
        return log_store_from_env(env, http)
    except ValueError as error:
        raise rejected(str(error)) from None


async def print_logs(
    ref: ObjectRef,
    status_json: dict[str, Any],
    dependencies: ActivityDependencies,
    store: LogStore | None,
    console: Console,
    *,
    follow: bool,
) -> int:
    """Prints the driver log of the RayJob whose status is `status_json` from the first place that has it
    (see the module's docstring); `follow`: from its dashboard until the Ray job ends."""
    status = RayJobStatus.model_validate(status_json)
    try:
        live = await live_job(ref, status, dependencies)
        logs = await _read(live) if live is not None else None
    except Exception as error:  # no kubeconfig, no API server, no dashboard: what was saved may still help
        console.err(f"{describe_ref(ref)}: its live log cannot be read ({error}); looking for a saved one")
        live, logs = None, None
    if live is not None and logs is not None:
        console.stdout.write(logs)
        console.stdout.flush()
        if follow:
            await _follow(live, len(logs), console)
        return 0
    if store is not None and status.job_id:
        key = log_store_key(ref.namespace, ref.name, status.job_id)
        try:
            kept = await store.get(key)
        except LogStoreError as error:
            raise CommandError(str(error)) from None
        if kept is not None:
            console.err(
                f"{describe_ref(ref)}: its RayCluster is gone; the log kept at {store.location(key)}:"
            )
            console.stdout.write(kept.decode(errors="replace"))
            console.stdout.flush()
            return 0
    condition = find_condition(status.conditions, DRIVER_LOG_CONDITION)
    tail = saved_tail(condition) if condition is not None else None
    if condition is not None and tail is not None:
        console.err(f"{describe_ref(ref)}: its RayCluster is gone; {_header(condition)}")
        console.out(tail)
        return 0
    raise CommandError(_nothing_kept(ref, status, condition, store))


def _header(condition: Condition) -> str:
    return condition.message.split("\n", 1)[0]


def _nothing_kept(
    ref: ObjectRef, status: RayJobStatus, condition: Condition | None, store: LogStore | None
) -> str:
    what = f"{describe_ref(ref)}: no driver log: "
    if not status.job_id:
        return what + "it has not submitted a Ray job"
    if condition is not None:
        return what + f"its RayCluster is gone, and {condition.message}"
    if store is None:
        saves = "without a log store raypilot saves the driver log of a failed attempt only"
        saves += f"; set {LOG_STORE_ENV} on the worker and here to keep every log whole"
    else:
        saves = f"the log store has no copy: the worker may have run without {LOG_STORE_ENV}"
    return what + f"its RayCluster (and with it the log of Ray job {status.job_id}) is gone ({saves})"


async def live_job(
    ref: ObjectRef, status: RayJobStatus, dependencies: ActivityDependencies
) -> LiveJob | None:
    """The RayJob's Ray job on its RayCluster's dashboard, None when it has no job or the cluster is gone."""
    if not status.job_id or not status.ray_cluster_name:
        return None
    path = RAYCLUSTER.path(ref.namespace, status.ray_cluster_name)
    cluster = await dependencies.apiserver().get_json(path, f"get RayCluster {status.ray_cluster_name}")
    if cluster is None:
        return None
    job = RayJob(metadata=ObjectMeta(name=ref.name, namespace=ref.namespace), status=status)
    target: DashboardTarget = dashboard_target(job, RayClusterSpec.model_validate(cluster.get("spec") or {}))
    return LiveJob(await DashboardClient.open(dependencies, target), status.job_id)


async def _read(live: LiveJob) -> str | None:
    """The whole driver log, None when the dashboard has no such job; a failure to reach it raises."""
    what = f"the driver log of Ray job {live.submission_id}"
    response = await live.client.call(
        "GET", f"/api/jobs/{live.submission_id}/logs", what, none_if_missing=True
    )
    return None if response is None else str(json_object(response).get("logs") or "")


async def _follow(live: LiveJob, printed: int, console: Console) -> None:
    """Prints what the log gains until the Ray job is terminal, then the last of it."""
    while True:
        info = await fetch_job_info(live.client, live.submission_id)
        ended = info.outcome != "found" or info.terminal
        if not ended:
            await asyncio.sleep(FOLLOW_SECONDS)
        logs = await _read(live)
        if logs is None:
            return
        if len(logs) > printed:
            console.stdout.write(logs[printed:])
            console.stdout.flush()
            printed = len(logs)
        if ended:
            return
