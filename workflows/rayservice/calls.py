"""The RayService workflow's calls into activities, with its ownership (labels and workflow-id
annotation) applied: one I/O act per call, through the activity declarations of `wire.stubs` and the
policies of `workflows.kit.calls` (acts: RECONCILE; long waits that return only on change: WATCH; replica
ranks: RANKS_READ).
"""

from __future__ import annotations

from typing import Any, Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.naming import KIND_RAYSERVICE, LABEL_SERVE
    from wire import stubs
    from wire.dashboard import (
        DashboardTarget,
        PutServeConfig,
        ReadReplicaRanks,
        ReplicaRanks,
        ServeObservation,
        WaitServe,
    )
    from wire.drain import (
        CloseServeConnections,
        ServeConnectionsClosing,
        ServeRequestsInFlight,
        WaitServeRequestsInFlight,
    )
    from wire.kubernetes import (
        ClusterPods,
        CreateObject,
        DeleteObject,
        GatewayObservation,
        InvolvedObject,
        ObjectKey,
        Observation,
        OwnedObjects,
        Ownership,
        PatchRoute,
        PodLabels,
        PodsObservation,
        RecordEvent,
        RoutePatched,
        ServiceEndpoints,
        UpdateSpec,
        WaitClusterPods,
        WaitGateway,
        WaitRayCluster,
        WaitReadyEndpoints,
    )
    from workflows.decisions.rayservice.cluster import InPlaceUpdate
    from workflows.decisions.rayservice.conditions import RayServiceEvent

from workflows.kit.calls import IO, call, start

__all__ = ["RayServiceCalls"]

SERVE_POLL_SECONDS: Final = 2.0


class RayServiceCalls:
    """The activities one RayService uses, with its ownership (labels and workflow-id annotation) applied."""

    def __init__(self, namespace: str, name: str, workflow_id: str) -> None:
        self.namespace = namespace
        self.name = name
        self.ownership = Ownership(KIND_RAYSERVICE, name, workflow_id)
        self.involved_object = InvolvedObject(KIND_RAYSERVICE, name, namespace, api_version="ray.io/v1")

    # ---- RayClusters ----------------------------------------------------------------------------------

    async def create_cluster(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return await call(stubs.create_raycluster, CreateObject(manifest, self.ownership), IO.RECONCILE)

    async def get_cluster(self, name: str) -> dict[str, Any] | None:
        return await call(stubs.get_raycluster, ObjectKey(self.namespace, name), IO.RECONCILE)

    async def update_cluster(self, name: str, update: InPlaceUpdate) -> dict[str, Any] | None:
        request = UpdateSpec(self.namespace, name, update.spec, update.labels, update.annotations)
        return await call(stubs.update_raycluster_spec, request, IO.RECONCILE)

    async def delete_cluster(self, name: str, uid: str | None = None) -> bool:
        return await call(stubs.delete_raycluster, DeleteObject(self.namespace, name, uid=uid), IO.RECONCILE)

    # ---- Services and endpoints ---------------------------------------------------------------------

    async def create_service(self, body: dict[str, Any]) -> dict[str, Any]:
        return await call(stubs.create_service, CreateObject(body, self.ownership), IO.RECONCILE)

    async def update_service_spec(self, name: str, spec: dict[str, Any]) -> dict[str, Any] | None:
        return await call(stubs.update_service_spec, UpdateSpec(self.namespace, name, spec), IO.RECONCILE)

    async def count_ready_endpoints(self, service: str) -> int:
        return await call(
            stubs.count_ready_endpoints, ServiceEndpoints(self.namespace, service), IO.RECONCILE
        )

    async def label_head_pod(self, pod_name: str, value: str) -> None:
        labels = PodLabels(self.namespace, pod_name, {LABEL_SERVE: value})
        await call(stubs.patch_pod_labels, labels, IO.RECONCILE)

    async def list_cluster_pods(self, cluster_name: str) -> list[dict[str, Any]]:
        return await call(stubs.list_cluster_pods, ClusterPods(self.namespace, cluster_name), IO.RECONCILE)

    async def read_serve_requests_in_flight(self, cluster_name: str, metrics_port: int) -> int | None:
        request = ServeRequestsInFlight(self.namespace, cluster_name, metrics_port)
        return await call(stubs.read_serve_requests_in_flight, request, IO.RECONCILE)

    async def close_serve_connections(
        self, target: DashboardTarget, cluster: str, seconds: float
    ) -> ServeConnectionsClosing:
        """A short Ray job on `cluster` (a few tries, as a ranks read); its submission id is the cluster's."""
        request = CloseServeConnections(target, f"raypilot-close-connections-{cluster}", seconds)
        return await call(
            stubs.close_serve_connections,
            request,
            IO.RANKS_READ,
            summary=f"Serve proxies of {cluster} close kept-alive connections",
        )

    async def delete_pod(self, name: str, uid: str) -> bool:
        return await call(stubs.delete_pod, DeleteObject(self.namespace, name, uid=uid or None), IO.RECONCILE)

    # ---- Serve ----------------------------------------------------------------------------------------

    async def put_serve_config(self, target: DashboardTarget, config: dict[str, Any]) -> None:
        await call(stubs.put_serve_config, PutServeConfig(target, config), IO.RECONCILE)

    # ---- events and ownership ---------------------------------------------------------------------------

    async def record_event(self, event_id: str, event: RayServiceEvent) -> None:
        request = RecordEvent(self.involved_object, event_id, event.reason, event.message, event.type)
        await call(stubs.record_event, request, IO.RECONCILE)

    def _owned(self) -> OwnedObjects:
        return OwnedObjects(self.namespace, KIND_RAYSERVICE, self.name)

    async def delete_owned(self) -> list[dict[str, str]]:
        return await call(stubs.delete_owned_objects, self._owned(), IO.RECONCILE)

    async def list_owned(self) -> list[dict[str, str]]:
        return await call(stubs.list_owned_objects, self._owned(), IO.RECONCILE)

    # ---- Gateway API (incremental upgrades) ----------------------------------------------------------

    async def create_gateway(self, body: dict[str, Any]) -> dict[str, Any]:
        return await call(stubs.create_gateway, CreateObject(body, self.ownership), IO.RECONCILE)

    async def update_gateway_spec(self, name: str, spec: dict[str, Any]) -> None:
        await call(stubs.update_gateway_spec, UpdateSpec(self.namespace, name, spec), IO.RECONCILE)

    async def create_http_route(self, body: dict[str, Any]) -> dict[str, Any]:
        return await call(stubs.create_httproute, CreateObject(body, self.ownership), IO.RECONCILE)

    async def get_http_route(self, name: str) -> dict[str, Any] | None:
        return await call(stubs.get_httproute, ObjectKey(self.namespace, name), IO.RECONCILE)

    async def update_http_route_spec(self, name: str, spec: dict[str, Any]) -> dict[str, Any] | None:
        return await call(stubs.update_httproute_spec, UpdateSpec(self.namespace, name, spec), IO.RECONCILE)

    # A shared Gateway, a user-owned HTTPRoute (raypilot.io/gateway, raypilot.io/httproute): in their own
    # namespaces, read and (the route) patched, never created, owned or deleted.

    async def get_gateway_at(self, namespace: str, name: str) -> dict[str, Any] | None:
        return await call(stubs.get_gateway, ObjectKey(namespace, name), IO.RECONCILE)

    async def get_http_route_at(self, namespace: str, name: str) -> dict[str, Any] | None:
        return await call(stubs.get_httproute, ObjectKey(namespace, name), IO.RECONCILE)

    async def patch_http_route(self, namespace: str, name: str, patch: list[dict[str, Any]]) -> RoutePatched:
        return await call(stubs.patch_httproute, PatchRoute(namespace, name, patch), IO.RECONCILE)

    async def get_namespace_labels(self, namespace: str) -> dict[str, str] | None:
        return await call(stubs.get_namespace_labels, namespace, IO.RECONCILE)

    async def create_per_cluster_service(self, body: dict[str, Any]) -> dict[str, Any]:
        # Owned by its RayCluster (the body carries the ownerReference); ownership labels added as well.
        return await self.create_service(body)

    # ---- waits (started, raced and cancelled by RayServiceWorld) -----------------------------------------

    def wait_head_ready(self, cluster: str) -> workflow.ActivityHandle[Observation]:
        request = WaitRayCluster(self.namespace, cluster, until="head_ready")
        return start(stubs.wait_raycluster, request, IO.WATCH, summary=f"head Pod of {cluster} ready")

    def wait_cluster_change(
        self, cluster: str, last_view: dict[str, Any] | None
    ) -> workflow.ActivityHandle[Observation]:
        request = WaitRayCluster(self.namespace, cluster, last_view=last_view, until="change")
        return start(stubs.wait_raycluster, request, IO.WATCH, summary=f"RayCluster {cluster} changes")

    def wait_serve(
        self,
        target: DashboardTarget,
        cluster: str,
        serve_port: int,
        last_view: dict[str, Any] | None,
        quiet: bool,
    ) -> workflow.ActivityHandle[ServeObservation]:
        """`quiet`: the RayService is settled (`serve_wait_is_quiet`), so a heartbeat a minute will do."""
        request = WaitServe(target, cluster, serve_port, True, last_view, SERVE_POLL_SECONDS)
        io = IO.QUIET_WATCH if quiet else IO.WATCH
        return start(stubs.wait_serve, request, io, summary=f"Serve of {cluster} changes")

    def read_replica_ranks(
        self, target: DashboardTarget, cluster: str, submission_id: str
    ) -> workflow.ActivityHandle[ReplicaRanks]:
        request = ReadReplicaRanks(target, submission_id)
        return start(
            stubs.read_replica_ranks, request, IO.RANKS_READ, summary=f"Serve replica ranks of {cluster}"
        )

    def wait_ready_endpoints(
        self, services: list[str], last_counts: dict[str, int]
    ) -> workflow.ActivityHandle[dict[str, int]]:
        request = WaitReadyEndpoints(self.namespace, services, last_counts)
        return start(stubs.wait_ready_endpoints, request, IO.WATCH, summary="serve endpoints change")

    def wait_cluster_pods(
        self, cluster: str, last_view: dict[str, Any] | None
    ) -> workflow.ActivityHandle[PodsObservation]:
        request = WaitClusterPods(self.namespace, cluster, last_view)
        return start(stubs.wait_cluster_pods, request, IO.WATCH, summary=f"Pods of {cluster} change")

    def wait_serve_requests_in_flight(
        self, cluster: str, metrics_port: int, quiet_reads: int, poll_seconds: float
    ) -> workflow.ActivityHandle[int | None]:
        request = WaitServeRequestsInFlight(self.namespace, cluster, metrics_port, quiet_reads, poll_seconds)
        return start(
            stubs.wait_serve_requests_in_flight, request, IO.WATCH, summary=f"requests in flight on {cluster}"
        )

    def wait_gateway(
        self, gateway: str, route: str | None, last_view: dict[str, Any] | None
    ) -> workflow.ActivityHandle[GatewayObservation]:
        request = WaitGateway(self.namespace, gateway, route, last_view, until="change")
        return start(stubs.wait_gateway, request, IO.WATCH, summary="Gateway/HTTPRoute status")

    def wait_shared_gateway(
        self,
        gateway: tuple[str, str],
        route: tuple[str, str],
        labels_of: str | None,
        last_view: dict[str, Any] | None,
    ) -> workflow.ActivityHandle[GatewayObservation]:
        """A shared Gateway and the route on it ((namespace, name) each), with their generations (a spec
        change, e.g. allowedRoutes or the rules, counts) and the labels of `labels_of`."""
        request = WaitGateway(
            self.namespace,
            gateway[1],
            route[1],
            last_view,
            until="change",
            gateway_namespace=gateway[0],
            route_namespace=route[0],
            with_specs=True,
            namespace_labels_of=labels_of,
        )
        summary = f"Gateway {gateway[0]}/{gateway[1]} and HTTPRoute {route[0]}/{route[1]}"
        return start(stubs.wait_gateway, request, IO.WATCH, summary=summary)
