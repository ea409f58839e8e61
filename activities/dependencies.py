"""What every activity shares: the clients and settings of one worker process."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import httpx
from kubernetes import client
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.kubernetes.async_api import AsyncApiServer
from activities.kubernetes.client import KubeObjects, load_kube_configuration, running_in_pod
from models.operator import DEFAULT_CLUSTER_DOMAIN

DashboardAccess = Literal["direct", "proxy"]
DASHBOARD_ACCESS_ENV = "RAYPILOT_DASHBOARD_ACCESS"
# The error type of an activity that needs Temporal on a worker built without a client (embedded, tests).
NO_TEMPORAL_CLIENT = "NoTemporalClient"


def dashboard_access_from_env(env: Mapping[str, str]) -> DashboardAccess:
    """RAYPILOT_DASHBOARD_ACCESS: `direct` (the head Service's cluster DNS name, for a worker inside the
    cluster) or `proxy` (the API server's service proxy); unset means direct in a pod, else proxy."""
    value = env.get(DASHBOARD_ACCESS_ENV, "").strip().lower()
    if not value:
        return "direct" if running_in_pod(env) else "proxy"
    if value not in ("direct", "proxy"):
        raise ValueError(f"{DASHBOARD_ACCESS_ENV} must be direct or proxy, got {value!r}")
    return "direct" if value == "direct" else "proxy"


@dataclass
class ActivityDependencies:
    """Clients shared by all activities of one worker process. The Kubernetes clients are made on first use so
    a worker starts (and registers with Temporal) even before a kubeconfig exists."""

    env: Mapping[str, str]
    http: httpx.AsyncClient = field(
        default_factory=lambda: httpx.AsyncClient(
            # No browser-like headers: the Ray dashboard rejects writes from "browsers" (apis-and-peers A.1).
            headers={"User-Agent": "raypilot"},
            timeout=httpx.Timeout(10.0),
            trust_env=False,
        )
    )
    kube_configuration: client.Configuration | None = None
    # The worker's Temporal client, for the activity that reads a workflow id's earlier runs.
    temporal_client: Client | None = None
    # Tests replace the network under the API server client (httpx.MockTransport).
    apiserver_transport: httpx.AsyncBaseTransport | None = None
    dashboard_access: DashboardAccess = field(init=False)
    cluster_domain: str = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _kube: KubeObjects | None = field(default=None, init=False, repr=False)
    _apiserver: AsyncApiServer | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.dashboard_access = dashboard_access_from_env(self.env)
        self.cluster_domain = self.env.get("CLUSTER_DOMAIN", "").strip() or DEFAULT_CLUSTER_DOMAIN

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, temporal_client: Client | None = None
    ) -> ActivityDependencies:
        return cls(env=dict(os.environ if env is None else env), temporal_client=temporal_client)

    def require_temporal_client(self) -> Client:
        """The worker's Temporal client, for activities that talk to Temporal itself; without one the activity
        fails for good (retrying on the same worker cannot help)."""
        if self.temporal_client is None:
            raise ApplicationError(
                "the worker has no Temporal client", type=NO_TEMPORAL_CLIENT, non_retryable=True
            )
        return self.temporal_client

    def configuration(self) -> client.Configuration:
        with self._lock:
            if self.kube_configuration is None:
                self.kube_configuration = load_kube_configuration(self.env)
            return self.kube_configuration

    def kube(self) -> KubeObjects:
        """The blocking JSON client (sync activities, on the worker's thread pool)."""
        configuration = self.configuration()
        with self._lock:
            if self._kube is None:
                self._kube = KubeObjects(client.ApiClient(configuration))
            return self._kube

    def apiserver(self) -> AsyncApiServer:
        """The async client of the same API server (waits, Secrets and the dashboard proxy)."""
        configuration = self.configuration()
        with self._lock:
            if self._apiserver is None:
                self._apiserver = AsyncApiServer(configuration, self.apiserver_transport)
            return self._apiserver

    async def aclose(self) -> None:
        await self.http.aclose()
        if self._apiserver is not None:
            await self._apiserver.aclose()
        if self._kube is not None:
            self._kube.api_client.close()
