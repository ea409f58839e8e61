"""Serve replica ranks of a RayCluster, read by a short Ray job (raypilot beyond KubeRay, seed 003).

Ray 2.60's dashboard does not report a replica's rank: `ReplicaDetails` has no such field, and the only
reader is the Serve controller's private `_get_replica_ranks_mapping` (the ranks live in the controller's
`DeploymentRankManager`; replicas learn theirs through `serve.get_replica_context()`). So this activity
submits a tiny driver through the dashboard's Jobs API that asks the controller for every deployment's
mapping and prints it as one JSON line, waits for the job, parses its log and deletes the job record.

The workflow runs it only when a cluster's deployments have settled (every replica RUNNING at its target,
every deployment HEALTHY: that is when Serve makes ranks contiguous), once per settled replica set, with a
submission id derived from that set: a retried attempt finds its own job instead of starting another one.
The private API may change between Ray minor versions; then the job fails and the status shows no ranks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from typing import TYPE_CHECKING, Any, Final

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.dashboard import fetch_job_info, json_object, post_job, shorten_middle
from activities.dashboard_client import DashboardClient
from activities.waits import Heartbeater
from wire import names
from wire.dashboard import JobInfoAnswer, ReadReplicaRanks, ReplicaRanks

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

RANKS_MARKER: Final = "RAYPILOT_REPLICA_RANKS "
# The driver: for each deployment the controller knows, replica id -> [rank, node_rank, local_rank]
# (Ray 2.50-2.51 hold a bare int rank; 2.52+ a ReplicaRank).
RANKS_DRIVER: Final = f"""
import json
import ray
from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

ray.init(log_to_driver=False)
controller = ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
found = {{}}
for deployment in ray.get(controller.list_deployment_ids.remote()):
    mapping = ray.get(controller._get_replica_ranks_mapping.remote(deployment))
    found.setdefault(deployment.app_name, {{}})[deployment.name] = {{
        str(replica): [
            getattr(rank, "rank", rank),
            getattr(rank, "node_rank", None),
            getattr(rank, "local_rank", None),
        ]
        for replica, rank in mapping.items()
    }}
print({RANKS_MARKER!r} + json.dumps(found))
"""
RANKS_ENTRYPOINT: Final = f"python -c {shlex.quote(RANKS_DRIVER)}"
JOB_METADATA: Final = {"raypilot": "replica-ranks"}
MAX_ERROR_CHARS: Final = 600
CLEANUP_SECONDS: Final = 20.0


def ranks_job_request(submission_id: str) -> dict[str, Any]:
    return {"entrypoint": RANKS_ENTRYPOINT, "submission_id": submission_id, "metadata": JOB_METADATA}


def _rank_entry(raw: Any) -> list[int | None] | None:
    if not isinstance(raw, list) or len(raw) != 3:
        return None
    values = [value if isinstance(value, int) and not isinstance(value, bool) else None for value in raw]
    return values if values[0] is not None else None


def parse_ranks_output(logs: str) -> dict[str, dict[str, dict[str, list[int | None]]]] | None:
    """The mapping printed on the driver's last marker line, malformed entries dropped; None without one."""
    lines = [line for line in logs.splitlines() if line.startswith(RANKS_MARKER)]
    if not lines:
        return None
    try:
        body = json.loads(lines[-1][len(RANKS_MARKER) :])
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    ranks: dict[str, dict[str, dict[str, list[int | None]]]] = {}
    for app, deployments in body.items():
        if not isinstance(deployments, dict):
            continue
        by_deployment = ranks.setdefault(str(app), {})
        for deployment, replicas in deployments.items():
            if not isinstance(replicas, dict):
                continue
            entries = {replica: _rank_entry(raw) for replica, raw in replicas.items()}
            by_deployment[str(deployment)] = {
                str(replica): entry for replica, entry in entries.items() if entry is not None
            }
    return ranks


async def until_terminal(client: DashboardClient, submission_id: str, poll_seconds: float) -> JobInfoAnswer:
    """The job's info once it is terminal or gone."""
    while True:
        info = await fetch_job_info(client, submission_id)
        if info.outcome == "not_found" or info.terminal:
            return info
        await asyncio.sleep(poll_seconds)


async def remove_job(client: DashboardClient, submission_id: str, poll_seconds: float) -> None:
    """Best effort, bounded: stop the job, wait until it is terminal (a running job's record cannot be
    deleted), delete its record."""
    with contextlib.suppress(ApplicationError, httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(CLEANUP_SECONDS):
            await client.call("POST", f"/api/jobs/{submission_id}/stop", "StopJob", none_if_missing=True)
            info = await until_terminal(client, submission_id, poll_seconds)
            if info.outcome == "found":
                await client.call("DELETE", f"/api/jobs/{submission_id}", "DeleteJob", none_if_missing=True)


class ReplicaRankActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @activity.defn(name=names.READ_REPLICA_RANKS)
    async def read_replica_ranks(self, request: ReadReplicaRanks) -> ReplicaRanks:
        """Submit the ranks driver (a submission id that exists already is this read's own job), poll it
        until terminal (heartbeating), read its log, delete its record. A job that failed (Serve not running,
        a Ray without the private API) is answered with `error`, not raised: retrying would not help."""
        client = await DashboardClient.open(self.dependencies, request.target)
        submission_id = request.submission_id
        what = f"ReadReplicaRanks fail ({submission_id})"
        await post_job(client, ranks_job_request(submission_id), what)  # None: this read's own earlier job
        try:
            async with Heartbeater():
                info = await until_terminal(client, submission_id, request.poll_seconds)
        except asyncio.CancelledError:
            # The workflow no longer wants this read (the replica set moved on): leave no job record behind.
            await remove_job(client, submission_id, request.poll_seconds)
            raise
        if info.outcome == "not_found":
            # Its record went away (a head restart): the next attempt submits it again.
            raise ApplicationError(f"{what}: the job disappeared", type="RanksJobLost")
        logs_response = await client.call(
            "GET", f"/api/jobs/{submission_id}/logs", what, none_if_missing=True
        )
        logs = str(json_object(logs_response).get("logs") or "") if logs_response is not None else ""
        await client.call("DELETE", f"/api/jobs/{submission_id}", what, none_if_missing=True)
        ranks = parse_ranks_output(logs) if info.status == "SUCCEEDED" else None
        if ranks is None:
            detail = info.message or logs[-MAX_ERROR_CHARS:]
            error = f"the replica ranks job ended {info.status}: {shorten_middle(detail, MAX_ERROR_CHARS)}"
            activity.logger.warning("%s", client.redact(error))
            return ReplicaRanks({}, client.redact(error))
        return ReplicaRanks(ranks)
