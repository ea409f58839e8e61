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

import json
import shlex
from typing import TYPE_CHECKING, Any, Final

from activities.dashboard_client import DashboardClient
from activities.driver_jobs import DriverJobKind, driver_job_request, run_driver_job
from wire import stubs
from wire.dashboard import ReadReplicaRanks, ReplicaRanks
from wire.stubs.common import implements

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
RANKS_JOB: Final = DriverJobKind(
    activity="ReadReplicaRanks",
    label="replica ranks",
    metadata={"raypilot": "replica-ranks"},
    lost_type="RanksJobLost",
)


def ranks_job_request(submission_id: str) -> dict[str, Any]:
    return driver_job_request(RANKS_ENTRYPOINT, submission_id, RANKS_JOB.metadata)


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


class ReplicaRankActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @implements(stubs.read_replica_ranks)
    async def read_replica_ranks(self, request: ReadReplicaRanks) -> ReplicaRanks:
        """Submit the ranks driver (a submission id that exists already is this read's own job), poll it
        until terminal (heartbeating), read its log, delete its record. A job that failed (Serve not running,
        a Ray without the private API) is answered with `error`, not raised: retrying would not help."""
        client = await DashboardClient.open(self.dependencies, request.target)
        run = await run_driver_job(
            client, RANKS_JOB, RANKS_ENTRYPOINT, request.submission_id, request.poll_seconds
        )
        ranks = parse_ranks_output(run.logs) if run.info.status == "SUCCEEDED" else None
        if ranks is None:
            return ReplicaRanks({}, run.failure(client))
        return ReplicaRanks(ranks)
