"""Inputs and results of the Ray Dashboard activities (pure dataclasses: workflows import them).

A `DashboardTarget` names a RayCluster's dashboard the way a workflow knows it: namespace, head Service,
the dashboard address from the head Service (RayJob's status.dashboardURL) and, when the cluster uses token
auth, the Secret holding the token. The token itself never appears here: the activity reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from models.naming import DEFAULT_DASHBOARD_PORT, DEFAULT_SERVE_PORT
from models.raycluster import AuthMode, RayClusterSpec

JobInfoOutcome = Literal["found", "not_found", "unavailable"]
TERMINAL_JOB_STATUSES: Final = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})
AUTH_TOKEN_SECRET_KEY: Final = "auth_token"


@dataclass(frozen=True)
class RayTokenSecret:
    """Where a cluster's Ray auth token is: a Secret's key."""

    name: str
    key: str = AUTH_TOKEN_SECRET_KEY


def ray_token_secret(cluster_name: str, spec: RayClusterSpec) -> RayTokenSecret | None:
    """The Secret with the cluster's Ray auth token, None when its Ray asks for none.

    With `authOptions.mode: token`, KubeRay keeps the token in authOptions.secretName, else in a Secret named
    after the cluster (key `auth_token`). A KubeRay without authOptions (1.5 and older) prunes the field, and
    its users turn token auth on in the head's Ray container itself: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN
    from a Secret's key, which is then where the token is."""
    options = spec.auth_options
    if options is not None and options.mode == AuthMode.TOKEN:
        return RayTokenSecret(options.secret_name or cluster_name)
    containers = spec.head_group_spec.template.spec.containers
    if not containers or (containers[0].env_value("RAY_AUTH_MODE") or "").lower() != "token":
        return None
    source = next((var.value_from for var in containers[0].env if var.name == "RAY_AUTH_TOKEN"), None)
    reference = (source or {}).get("secretKeyRef") or {}
    if not reference.get("name"):
        return None
    return RayTokenSecret(str(reference["name"]), str(reference.get("key") or AUTH_TOKEN_SECRET_KEY))


@dataclass(frozen=True)
class DashboardTarget:
    namespace: str
    head_service: str
    # "<host>:<port>" without a scheme (RayJob status.dashboardURL); used when the worker reaches the
    # dashboard directly. Empty: "<head_service>.<namespace>.svc.<cluster domain>:<dashboard_port>".
    dashboard_url: str = ""
    dashboard_port: int = DEFAULT_DASHBOARD_PORT
    port_name: str = "dashboard"  # the head Service port the API server's proxy goes through
    auth_secret: str | None = None
    auth_secret_key: str = AUTH_TOKEN_SECRET_KEY

    @staticmethod
    def token_fields(cluster_name: str, spec: RayClusterSpec) -> dict[str, str]:
        """`auth_secret` and `auth_secret_key` for a cluster (none when its Ray asks for no token)."""
        secret = ray_token_secret(cluster_name, spec)
        return {} if secret is None else {"auth_secret": secret.name, "auth_secret_key": secret.key}

    def direct_address(self, cluster_domain: str) -> str:
        if self.dashboard_url:
            return self.dashboard_url.removeprefix("http://").rstrip("/")
        return f"{self.head_service}.{self.namespace}.svc.{cluster_domain}:{self.dashboard_port}"


@dataclass(frozen=True)
class SubmitJob:
    """POST /api/jobs/ with `request` (entrypoint, submission_id chosen by the workflow, runtime_env, ...)."""

    target: DashboardTarget
    request: dict[str, Any]


@dataclass(frozen=True)
class SubmitJobResult:
    submission_id: str
    created: bool  # False: a job with this submission id existed already (a retried submission)


@dataclass(frozen=True)
class RayJobKey:
    target: DashboardTarget
    submission_id: str


@dataclass(frozen=True)
class JobLogs:
    target: DashboardTarget
    submission_id: str
    tail_chars: int = 4000


@dataclass(frozen=True)
class JobInfoAnswer:
    """GET /api/jobs/<id>: found (status, message, times in ms since the epoch, error_type), not_found (404),
    or unavailable (no answer, another status or a body that is not JobDetails; `error` says which)."""

    outcome: JobInfoOutcome
    status: str = ""
    message: str = ""
    start_time_ms: int = 0
    end_time_ms: int = 0
    error_type: str = ""
    error: str = ""

    @property
    def terminal(self) -> bool:
        return self.outcome == "found" and self.status in TERMINAL_JOB_STATUSES

    def key(self) -> tuple[str, str, str]:
        """What a wait compares: the outcome and, when found, status and message."""
        return (self.outcome, self.status, self.message)


@dataclass(frozen=True)
class SubmittedJob:
    """One Ray job of `GET /api/jobs/` as an adopted RayJob looks for KubeRay's submission among them."""

    submission_id: str
    entrypoint: str = ""
    metadata: dict[str, str] | None = None
    status: str = ""
    start_time_ms: int = 0


@dataclass(frozen=True)
class StopJobResult:
    found: bool  # False: the job does not exist on the cluster (nothing to stop)
    stopped: bool  # True: a running job was asked to stop; False with found: it was terminal already
    status: str = ""


@dataclass(frozen=True)
class PutServeConfig:
    """PUT /api/serve/applications/ with `config` (serveConfigV2 as JSON, target_capacity included)."""

    target: DashboardTarget
    config: dict[str, Any]


@dataclass(frozen=True)
class HeadServeHealth:
    """GET http://<podIP>:<serve port>/-/healthz of a head Pod (through the Pod proxy in proxy mode)."""

    namespace: str
    pod_name: str
    pod_ip: str
    serve_port: int = DEFAULT_SERVE_PORT


@dataclass(frozen=True)
class ReadReplicaRanks:
    """Run the replica ranks driver as the Ray job `submission_id` (see activities/replica_ranks.py)."""

    target: DashboardTarget
    submission_id: str
    poll_seconds: float = 0.5


@dataclass(frozen=True)
class ReplicaRanks:
    """application -> deployment -> replica id -> [rank, node_rank, local_rank] as the Serve controller
    holds them (node and local rank None on a Ray that has only a global rank); `error` when not read."""

    ranks: dict[str, dict[str, dict[str, list[int | None]]]]
    error: str = ""


# ---- waits ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WaitRayJob:
    """Until GET /api/jobs/<id> answers differently from `last` (outcome, status, message) or the job is
    terminal."""

    target: DashboardTarget
    submission_id: str
    last: JobInfoAnswer | None = None
    poll_seconds: float = 2.0


@dataclass(frozen=True)
class WaitServe:
    """Until the Serve applications (statuses, running replicas per deployment, target capacity), the head
    Pod (identity, Ray container state) or its Serve proxy health differ from `last_view`."""

    target: DashboardTarget
    cluster_name: str
    serve_port: int = DEFAULT_SERVE_PORT
    check_head: bool = True
    last_view: dict[str, Any] | None = None
    poll_seconds: float = 2.0


@dataclass(frozen=True)
class ServeObservation:
    details: dict[str, Any] | None  # trimmed ServeInstanceDetails; None when the dashboard did not answer
    error: str  # why details is None
    head_pod: dict[str, Any] | None  # trimmed head Pod (None: none found or not checked)
    head_serve_healthy: bool | None  # the head's /-/healthz answered 200 (None: not checked)
    view: dict[str, Any]  # pass back as last_view
