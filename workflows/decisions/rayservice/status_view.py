"""What the `status` query and the Web UI show of a RayService, and whether a status changed (so that
lastUpdateTime moves only then)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from models.base import dump_status
from models.rayservice import RayServiceStatuses
from workflows.decisions.rayservice.observed_clusters import cluster_names
from workflows.decisions.rayservice.serve_status import ServeDetails, parse_serve_details


def _comparable(status: RayServiceStatuses) -> dict[str, Any]:
    data = status.model_dump(mode="json", by_alias=True)
    data.pop("lastUpdateTime", None)
    return data


def stamp_status_update(
    old: RayServiceStatuses, new: RayServiceStatuses, now: datetime
) -> RayServiceStatuses:
    """KubeRay writes the status only when it changed, stamping lastUpdateTime then; an unchanged status
    keeps its old lastUpdateTime."""
    if _comparable(old) == _comparable(new):
        return new.model_copy(update={"last_update_time": old.last_update_time})
    return new.model_copy(update={"last_update_time": now})


def _replicas_by_deployment(details: ServeDetails) -> dict[tuple[str, str], list[dict[str, Any]]]:
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for app in details.applications:
        for deployment in app.deployments:
            if not deployment.replicas:
                continue
            replicas = []
            for replica in sorted(deployment.replicas, key=lambda r: (r.rank is None, r.rank, r.replica_id)):
                entry: dict[str, Any] = {"replicaId": replica.replica_id, "state": replica.state}
                for key, value in (
                    ("rank", replica.rank),
                    ("nodeRank", replica.node_rank),
                    ("localRank", replica.local_rank),
                    ("worldSize", replica.world_size),
                ):
                    if value is not None:
                        entry[key] = value
                replicas.append(entry)
            found[(app.name, deployment.name)] = replicas
    return found


def status_query(
    status: RayServiceStatuses, serve_details_by_cluster: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The `status` query: the RayService status as KubeRay writes it (camelCase, Go omitempty) and, beyond
    KubeRay, under each deployment of an application shown the `replicas` Serve reports (id, state, and the
    replica's rank / nodeRank / localRank / worldSize where reported)."""
    body = dump_status(status)
    for side in ("activeServiceStatus", "pendingServiceStatus"):
        side_status = body.get(side) or {}
        details = serve_details_by_cluster.get(str(side_status.get("rayClusterName") or ""))
        applications = side_status.get("applicationStatuses") or {}
        if details is None or not applications:
            continue
        replicas = _replicas_by_deployment(parse_serve_details(details))
        for app_name, app in applications.items():
            for deployment_name, deployment in (app.get("serveDeploymentStatuses") or {}).items():
                found = replicas.get((app_name, deployment_name))
                if found:
                    deployment["replicas"] = found
    return body


def current_details(status: RayServiceStatuses, phase: str, upgrade_line: str = "") -> str:
    """The Web UI's current details: the phase, the clusters, the applications and endpoints, and during an
    incremental upgrade its progress line."""
    active, pending = cluster_names(status)
    parts = [phase]
    if active:
        apps = status.active_service_status.application_statuses
        running = sum(1 for app in apps.values() if app.status == "RUNNING")
        parts.append(f"active {active}" + (f" ({running}/{len(apps)} apps RUNNING)" if apps else ""))
    if pending:
        apps = status.pending_service_status.application_statuses
        running = sum(1 for app in apps.values() if app.status == "RUNNING")
        parts.append(f"pending {pending}" + (f" ({running}/{len(apps)} apps RUNNING)" if apps else ""))
    parts.append(f"{status.num_serve_endpoints} serve endpoints")
    if upgrade_line:
        parts.append(upgrade_line)
    return "; ".join(parts)
