"""The state of the RayService fake world (`raypilot.testing.rayservice_world.FakeRayWorld`): its clusters,
Services, Gateway and HTTPRoute, the Serve requests its clusters have in flight, the acts it logged, how tests
drive it, and what its waits observe."""

from __future__ import annotations

import asyncio
import zlib
from datetime import datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from models.naming import LABEL_CLUSTER, LABEL_SERVE
from models.operator import OperatorConfig
from raypilot.testing.rayservice_cluster import FakeCluster, LoggedAct
from raypilot.testing.rayservice_shared_objects import SharedObjects
from wire.dashboard import ServeObservation
from wire.drain import CloseServeConnections, ServeConnectionsClosing
from wire.kubernetes import OwnedObjects, RecordEvent
from wire.views import serve_view


class Unchanged(ApplicationError):
    """A wait saw nothing new: retried after the world's `unchanged_retry` (plus `off_the_grid`)."""


# Milliseconds that are no divisor of a whole second (primes above 5), one per wait by its activity id.
_OFFSETS_MS = tuple(n for n in range(7, 1000) if all(n % d for d in range(2, int(n**0.5) + 1)))


def off_the_grid(activity_id: str) -> timedelta:
    """A few milliseconds added to a wait's retry, distinct per wait and never a whole second after any
    number of retries below a thousand.

    A real watch answers when the world changes, at no particular instant; retries on a round grid would
    answer exactly when a timer the workflow started beside them fires (a 1 min pause, a 30 s retry),
    and in the task that timer wakes the workflow may cancel the wait whose answer arrived meanwhile. The
    time-skipping test server rejects that task (ACTIVITY_UNKNOWN, raypilot/testing/time_skipping.py), which
    the real server accepts; off the grid, two such events never share an instant."""
    # The SDK numbers a run's activities 1, 2, ...: consecutive waits get distinct offsets.
    key = int(activity_id) if activity_id.isdigit() else zlib.crc32(activity_id.encode())
    return timedelta(milliseconds=_OFFSETS_MS[key % len(_OFFSETS_MS)])


class FakeRayWorldState:
    """What the RayService fake world holds and how tests drive it;
    `raypilot.testing.rayservice_world.FakeRayWorld` adds its activities."""

    def __init__(self, config: OperatorConfig | None = None) -> None:
        self.config = config or OperatorConfig()
        self.clusters: dict[str, FakeCluster] = {}
        self.deleted_clusters: list[str] = []
        self.services: dict[str, dict[str, Any]] = {}
        self.gateway: dict[str, Any] | None = None
        self.route: dict[str, Any] | None = None
        # Shared Gateways and user-owned HTTPRoutes (raypilot.io/gateway, raypilot.io/httproute).
        self.shared = SharedObjects()
        self.events: list[RecordEvent] = []
        self.log: list[LoggedAct] = []
        self.heads_start_ready = True
        self.serve_mode_for_new_clusters = "running"
        self.reject_serve_config = False
        # Set: a deleted Pod leaves its cluster's Serve in this mode (e.g. "deploying" while replicas move).
        self.serve_mode_after_pod_delete: str | None = None
        self.endpoints_wait_registered = True
        self.pods_wait_registered = True  # False: no worker runs k8s.wait_cluster_pods (an older release)
        self.unchanged_retry: timedelta | None = timedelta(seconds=30)
        # True: a Serve wait from a known view neither answers nor heartbeats, as one whose worker was killed
        # (`serve_wait_lost` is set once one hangs).
        self.serve_waits_lost = False
        self.serve_wait_lost = asyncio.Event()
        # Drained deletion: each cluster's Serve requests in flight (absent: 0; None: no proxy answers), the
        # readings (time, cluster, answer) and closing jobs (time, request) the workflow asked for, the
        # closing job's answer (None: it fails) and whether a worker runs the drain wait (False: a release
        # before it).
        self.in_flight: dict[str, int | None] = {}
        self.in_flight_reads: list[tuple[datetime, str, int | None]] = []
        self.closings: list[tuple[datetime, CloseServeConnections]] = []
        self.closing_answer: ServeConnectionsClosing | None = ServeConnectionsClosing(1)
        self.drain_wait_registered = True
        self._uid = 0

    # ---- helpers for tests -------------------------------------------------------------------------------

    def acts(self, verb: str, kind: str | None = None) -> list[LoggedAct]:
        return [act for act in self.log if act.verb == verb and (kind is None or act.kind == kind)]

    def live_clusters(self) -> list[str]:
        return sorted(self.clusters)

    def selected_cluster(self, service: str) -> str:
        return str(
            ((self.services.get(service) or {}).get("spec") or {}).get("selector", {}).get(LABEL_CLUSTER, "")
        )

    def restart_head(self, cluster: str, lose_applications: bool = True) -> None:
        """The head Pod restarts; without GCS fault tolerance Serve forgets every application."""
        fake = self.clusters[cluster]
        fake.head_generation += 1
        fake.head_labels = {LABEL_SERVE: "false"}
        if lose_applications:
            fake.config = None

    # ---- internals -----------------------------------------------------------------------------------------

    def _record(self, verb: str, kind: str, name: str, detail: Any = None) -> None:
        self.log.append(LoggedAct(activity.info().current_attempt_scheduled_time, verb, kind, name, detail))

    def _next_uid(self) -> str:
        self._uid += 1
        return f"uid-{self._uid}"

    def _unchanged(self) -> Unchanged:
        retry = self.unchanged_retry
        return Unchanged(
            "nothing changed yet",
            type="Unchanged",
            next_retry_delay=retry + off_the_grid(activity.info().activity_id) if retry else None,
            category=ApplicationErrorCategory.BENIGN,
        )

    def _endpoints(self, service: str) -> int:
        cluster = self.clusters.get(self.selected_cluster(service))
        if cluster is None or not cluster.serving():
            return 0
        head = 1 if cluster.head_labels.get(LABEL_SERVE) == "true" else 0
        return head + cluster.worker_replicas()

    def _serve_observation(self, cluster: str) -> ServeObservation:
        fake = self.clusters.get(cluster)
        details = fake.details() if fake is not None and fake.head_ready else None
        head = fake.head_pod() if fake is not None else None
        healthy = fake.serving() if fake is not None and head is not None else False
        view = serve_view(details, head, healthy, True)
        return ServeObservation(details, "" if details is not None else "unreachable", head, healthy, view)

    def _owned(self, request: OwnedObjects) -> list[dict[str, str]]:
        found = [
            {"kind": "RayCluster", "name": name, "namespace": request.namespace} for name in self.clusters
        ]
        found += [{"kind": "Service", "name": name, "namespace": request.namespace} for name in self.services]
        if self.gateway is not None:
            found.append(
                {"kind": "Gateway", "name": self.gateway["metadata"]["name"], "namespace": request.namespace}
            )
        if self.route is not None:
            found.append(
                {"kind": "HTTPRoute", "name": self.route["metadata"]["name"], "namespace": request.namespace}
            )
        return [ref for ref in found if ref["name"] not in request.keep]
