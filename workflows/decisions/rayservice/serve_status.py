"""What a cluster's Ray Serve reports, and whether it is ready to take traffic.

KubeRay counterpart: getAndCheckServeStatus (rayservice_controller.go): ready iff at least one application and
every application RUNNING; application name "" is reported as "default"; the status keeps each application's
status/message and each deployment's status/message.

Where raypilot differs, deliberately: `ServeReadiness.ready` also requires every deployment to run at least
its `target_num_replicas` RUNNING replicas (KubeRay moves traffic as soon as apps say RUNNING, which can
precede the replicas after a target_capacity change). `runs_target_capacity` additionally checks that Serve
already applied the expected target_capacity, because the PUT is asynchronous. Replica ranks (Serve's
ReplicaRank) are summarised per deployment; the dashboard of Ray 2.60 does not report them, so they are
optional in the observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from models.rayservice import ApplicationStatus, AppStatus, ServeDeploymentStatus

__all__ = [
    "DEFAULT_SERVE_APP_NAME",
    "DeploymentReplicaSummary",
    "ServeApplication",
    "ServeDeployment",
    "ServeDetails",
    "ServeReadiness",
    "ServeReplica",
    "check_serve_status",
    "parse_serve_details",
    "replica_ranks_summary",
    "runs_target_capacity",
]

DEFAULT_SERVE_APP_NAME: Final = "default"
REPLICA_RUNNING: Final = "RUNNING"


@dataclass(frozen=True)
class ServeReplica:
    replica_id: str
    state: str
    rank: int | None = None
    node_rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None


@dataclass(frozen=True)
class ServeDeployment:
    name: str
    status: str
    message: str = ""
    target_num_replicas: int | None = None
    replicas: tuple[ServeReplica, ...] = ()

    @property
    def running_replicas(self) -> int:
        return sum(1 for replica in self.replicas if replica.state == REPLICA_RUNNING)


@dataclass(frozen=True)
class ServeApplication:
    name: str
    status: str
    message: str = ""
    deployments: tuple[ServeDeployment, ...] = ()


@dataclass(frozen=True)
class ServeDetails:
    """GET /api/serve/applications/?api_type=declarative, reduced to what the decisions read."""

    applications: tuple[ServeApplication, ...] = ()
    target_capacity: float | None = None


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _replica(raw: Mapping[str, Any]) -> ServeReplica:
    rank = raw.get("rank")
    rank_fields: Mapping[str, Any] = rank if isinstance(rank, Mapping) else {"rank": rank}
    return ServeReplica(
        replica_id=str(raw.get("replica_id") or ""),
        state=str(raw.get("state") or ""),
        rank=_optional_int(rank_fields.get("rank")),
        node_rank=_optional_int(rank_fields.get("node_rank", raw.get("node_rank"))),
        local_rank=_optional_int(rank_fields.get("local_rank", raw.get("local_rank"))),
        world_size=_optional_int(raw.get("world_size")),
    )


def parse_serve_details(body: Mapping[str, Any]) -> ServeDetails:
    """Leniently read the dashboard's ServeInstanceDetails JSON (unknown keys ignored, "" app ->
    "default")."""
    applications = []
    for app_name, raw_app in sorted((body.get("applications") or {}).items()):
        deployments = tuple(
            ServeDeployment(
                name=str(name),
                status=str(raw.get("status") or ""),
                message=str(raw.get("message") or ""),
                target_num_replicas=_optional_int(raw.get("target_num_replicas")),
                replicas=tuple(_replica(replica) for replica in raw.get("replicas") or []),
            )
            for name, raw in sorted((raw_app.get("deployments") or {}).items())
        )
        applications.append(
            ServeApplication(
                name=app_name or DEFAULT_SERVE_APP_NAME,
                status=str(raw_app.get("status") or ""),
                message=str(raw_app.get("message") or ""),
                deployments=deployments,
            )
        )
    target_capacity = body.get("target_capacity")
    return ServeDetails(
        applications=tuple(applications),
        target_capacity=float(target_capacity) if isinstance(target_capacity, int | float) else None,
    )


@dataclass(frozen=True)
class ServeReadiness:
    kuberay_ready: bool  # >= 1 application and all RUNNING (getAndCheckServeStatus)
    replicas_ready: bool  # every deployment runs >= target_num_replicas RUNNING replicas
    application_statuses: dict[str, AppStatus]
    waiting_for: str  # "" when ready, else what is missing (for logs and the Web UI)

    @property
    def ready(self) -> bool:
        return self.kuberay_ready and self.replicas_ready


def check_serve_status(details: ServeDetails) -> ServeReadiness:
    """getAndCheckServeStatus plus raypilot's replica rule."""
    statuses: dict[str, AppStatus] = {}
    waiting: list[str] = []
    for app in details.applications:
        statuses[app.name] = AppStatus(
            status=app.status,
            message=app.message,
            serve_deployment_statuses={
                deployment.name: ServeDeploymentStatus(status=deployment.status, message=deployment.message)
                for deployment in app.deployments
            },
        )
        if app.status != ApplicationStatus.RUNNING:
            waiting.append(f"application {app.name} is {app.status or 'unknown'}")
    kuberay_ready = bool(statuses) and not waiting
    if not statuses:
        waiting.append("no Serve application found")
    replicas_ready = True
    for app in details.applications:
        for deployment in app.deployments:
            target = deployment.target_num_replicas
            if target is not None and deployment.running_replicas < target:
                replicas_ready = False
                waiting.append(
                    f"deployment {app.name}/{deployment.name} runs "
                    f"{deployment.running_replicas}/{target} replicas"
                )
    return ServeReadiness(kuberay_ready, replicas_ready, statuses, "; ".join(waiting))


def runs_target_capacity(details: ServeDetails, target_capacity: int | float | None) -> bool:
    """Serve applied `target_capacity` (None = 100) and every application is ready with its replicas
    running."""
    applied = 100.0 if details.target_capacity is None else details.target_capacity
    expected = 100.0 if target_capacity is None else float(target_capacity)
    return applied == expected and check_serve_status(details).ready


@dataclass(frozen=True)
class DeploymentReplicaSummary:
    application: str
    deployment: str
    status: str
    target_num_replicas: int | None
    running_replicas: int
    ranks: tuple[int, ...]  # global ranks of the RUNNING replicas that report one, sorted
    world_size: int | None  # Serve's configured num_replicas (not scaled by target_capacity)
    ranks_contiguous: bool  # every RUNNING replica reports a rank and they are exactly 0..running-1


def replica_ranks_summary(details: ServeDetails) -> list[DeploymentReplicaSummary]:
    """Per deployment: how many replicas run and which Serve ranks they hold."""
    summaries = []
    for app in details.applications:
        for deployment in app.deployments:
            running = [replica for replica in deployment.replicas if replica.state == REPLICA_RUNNING]
            ranks = tuple(sorted(replica.rank for replica in running if replica.rank is not None))
            world_sizes = {replica.world_size for replica in running if replica.world_size is not None}
            summaries.append(
                DeploymentReplicaSummary(
                    application=app.name,
                    deployment=deployment.name,
                    status=deployment.status,
                    target_num_replicas=deployment.target_num_replicas,
                    running_replicas=len(running),
                    ranks=ranks,
                    world_size=max(world_sizes) if world_sizes else None,
                    ranks_contiguous=ranks == tuple(range(len(running))),
                )
            )
    return summaries
