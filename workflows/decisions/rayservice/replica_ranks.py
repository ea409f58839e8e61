"""Serve replica ranks in the RayService status (raypilot beyond KubeRay, seed 003): when to read them and
how they join what the dashboard reports.

Ray 2.60's dashboard reports replicas without their rank, so the ranks are read from the Serve controller by
a short Ray job (activities/replica_ranks.py). That costs a driver process on the head, so it runs only once
per settled replica set of a cluster: every application RUNNING, every deployment HEALTHY with exactly its
target number of replicas, all RUNNING. That is also when Serve has made the ranks contiguous (its
`_maybe_check_rank_consistency` runs in the control-loop tick where a deployment turns HEALTHY), so the
ranks read then stay right until the replica set changes. They are shown only while the dashboard still
reports that same set: during a scale or a restart the status shows replicas without ranks rather than stale
ones. `worldSize` is the deployment's configured num_replicas as the dashboard reports it in
`deployment_config` (what each replica's `serve.get_replica_context().world_size` is; not scaled by
target_capacity). A dashboard that reports ranks itself (simulated, or a later Ray) needs no job.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from wire.dashboard import ReplicaRanks
from workflows.decisions.rayservice.serve_status import (
    REPLICA_RUNNING,
    ServeDetails,
    parse_serve_details,
)
from workflows.decisions.rayservice.watches import Watch

__all__ = [
    "rank_read_watches",
    "rank_submission_id",
    "settled_replicas_key",
    "with_replica_ranks",
]

DEPLOYMENT_HEALTHY: Final = "HEALTHY"
APPLICATION_RUNNING: Final = "RUNNING"


def _digest(value: Any, length: int = 16) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def settled_replicas_key(details: ServeDetails) -> str:
    """A key of the settled replica set ("" while anything is still moving, when there is nothing to rank, or
    when the dashboard already reports every replica's rank)."""
    members = []
    unranked = False
    for app in details.applications:
        if app.status != APPLICATION_RUNNING:
            return ""
        for deployment in app.deployments:
            replicas = deployment.replicas
            if deployment.status != DEPLOYMENT_HEALTHY or not replicas:
                return ""
            if any(replica.state != REPLICA_RUNNING for replica in replicas):
                return ""
            if deployment.target_num_replicas is not None and len(replicas) != deployment.target_num_replicas:
                return ""
            unranked |= any(replica.rank is None for replica in replicas)
            members.append([app.name, deployment.name, sorted(replica.replica_id for replica in replicas)])
    if not members or not unranked:
        return ""
    return _digest(members)


def rank_submission_id(cluster: str, key: str, read: str) -> str:
    """The Ray job's submission id for one read (`read`: unique per read in the workflow, e.g. run id and a
    counter) of `key`'s replica set on `cluster`: a retried attempt finds its own job, and no two reads share
    an id (Ray does not reliably accept a submission id again after its record was deleted)."""
    return f"raypilot-replica-ranks-{_digest([cluster, key, read], 20)}"


def rank_read_watches(
    serve_details: Mapping[str, Mapping[str, Any] | None], read_keys: Mapping[str, str]
) -> list[Watch]:
    """A `ranks` read for each cluster whose settled replica set has not been read yet (`read_keys`: the
    key each cluster's last read was for)."""
    watches = []
    for cluster, details in serve_details.items():
        if details is None:
            continue
        key = settled_replicas_key(parse_serve_details(details))
        if key and read_keys.get(cluster) != key:
            watches.append(Watch("ranks", cluster, key))
    return watches


def _world_size(deployment: Mapping[str, Any]) -> int | None:
    value = deployment.get("num_replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def with_replica_ranks(details: Mapping[str, Any], read: tuple[str, ReplicaRanks] | None) -> dict[str, Any]:
    """The trimmed Serve details with each replica's rank (rank, node_rank, local_rank) and world_size added
    from `read` (the settled key it was read for, and what was read), when the details still show that
    settled replica set; otherwise unchanged."""
    result = dict(details)
    if read is None or not read[0] or read[1].error:
        return result
    key, ranks = read
    if settled_replicas_key(parse_serve_details(details)) != key:
        return result
    result = copy.deepcopy(result)
    for app_name, app in (result.get("applications") or {}).items():
        by_deployment = ranks.ranks.get(app_name) or {}
        for deployment_name, deployment in (app.get("deployments") or {}).items():
            by_replica = by_deployment.get(deployment_name) or {}
            world_size = _world_size(deployment)
            for replica in deployment.get("replicas") or []:
                found = by_replica.get(str(replica.get("replica_id") or ""))
                if found is None:
                    continue
                rank, node_rank, local_rank = found
                replica["rank"] = {"rank": rank, "node_rank": node_rank, "local_rank": local_rank}
                if world_size is not None:
                    replica["world_size"] = world_size
    return result
