"""The RayService workflow's calls into activities: each by its registered name, with its timeouts and retry
policy. One I/O act per call; the long waits return only on change (see activities/waits.py).

Timeouts: acts get 60 s per attempt and retry transient failures without limit (an unreachable API server
stalls the workflow rather than failing it; permanent errors are non-retryable by the activities'
classification). Waits run for at most an hour per attempt and are retried silently (a retry adds no history
event), so an idle RayService costs no history at all.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities import names
    from activities.dashboard_inputs import (
        DashboardTarget,
        PutServeConfig,
        ReadReplicaRanks,
        ReplicaRanks,
        ServeObservation,
        WaitServe,
    )
    from activities.inputs import (
        CreateObject,
        DeleteObject,
        GatewayObservation,
        InvolvedObject,
        ObjectKey,
        Observation,
        OwnedObjects,
        Ownership,
        PodLabels,
        RecordEvent,
        ServiceEndpoints,
        UpdateSpec,
        WaitGateway,
        WaitRayCluster,
        WaitReadyEndpoints,
    )
    from models.naming import KIND_RAYSERVICE, LABEL_SERVE
    from workflows.decisions.rayservice_conditions import RayServiceEvent
    from workflows.decisions.rayservice_workflow_support import InPlaceUpdate

__all__ = ["RayServiceCalls"]

ACT_TIMEOUT: Final = timedelta(seconds=60)
ACT_RETRY: Final = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))
WAIT_ATTEMPT: Final = timedelta(hours=1)
WAIT_HEARTBEAT: Final = timedelta(seconds=30)
WAIT_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=60),
    non_retryable_error_types=["NotFoundError"],
)
SERVE_POLL_SECONDS: Final = 2.0
# Reading replica ranks runs a Ray job (a driver start: seconds); a few tries, then the status goes without.
RANKS_ATTEMPT: Final = timedelta(minutes=3)
RANKS_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=2), maximum_interval=timedelta(seconds=20), maximum_attempts=5
)


class RayServiceCalls:
    """The activities one RayService uses, with its ownership (labels and workflow-id annotation) applied."""

    def __init__(self, namespace: str, name: str, workflow_id: str) -> None:
        self.namespace = namespace
        self.name = name
        self.ownership = Ownership(KIND_RAYSERVICE, name, workflow_id)

    async def _act(self, activity: str, arg: Any, result_type: type | None = None) -> Any:
        return await workflow.execute_activity(
            activity,
            arg,
            result_type=result_type,
            start_to_close_timeout=ACT_TIMEOUT,
            retry_policy=ACT_RETRY,
        )

    # ---- RayClusters ----------------------------------------------------------------------------------

    async def create_cluster(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._act(names.CREATE_RAYCLUSTER, CreateObject(manifest, self.ownership), dict))

    async def get_cluster(self, name: str) -> dict[str, Any] | None:
        found = await self._act(names.GET_RAYCLUSTER, ObjectKey(self.namespace, name), dict)
        return dict(found) if found is not None else None

    async def update_cluster(self, name: str, update: InPlaceUpdate) -> dict[str, Any] | None:
        request = UpdateSpec(self.namespace, name, update.spec, update.labels, update.annotations)
        found = await self._act(names.UPDATE_RAYCLUSTER_SPEC, request, dict)
        return dict(found) if found is not None else None

    async def delete_cluster(self, name: str, uid: str | None = None) -> bool:
        return bool(
            await self._act(names.DELETE_RAYCLUSTER, DeleteObject(self.namespace, name, uid=uid), bool)
        )

    # ---- Services and endpoints ---------------------------------------------------------------------

    async def create_service(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._act(names.CREATE_SERVICE, CreateObject(body, self.ownership), dict))

    async def update_service_spec(self, name: str, spec: dict[str, Any]) -> dict[str, Any] | None:
        found = await self._act(names.UPDATE_SERVICE_SPEC, UpdateSpec(self.namespace, name, spec), dict)
        return dict(found) if found is not None else None

    async def count_ready_endpoints(self, service: str) -> int:
        return int(
            await self._act(names.COUNT_READY_ENDPOINTS, ServiceEndpoints(self.namespace, service), int)
        )

    async def label_head_pod(self, pod_name: str, value: str) -> None:
        await self._act(
            names.PATCH_POD_LABELS, PodLabels(self.namespace, pod_name, {LABEL_SERVE: value}), dict
        )

    # ---- Serve ----------------------------------------------------------------------------------------

    async def put_serve_config(self, target: DashboardTarget, config: dict[str, Any]) -> None:
        await self._act(names.PUT_SERVE_CONFIG, PutServeConfig(target, config))

    # ---- events and ownership ---------------------------------------------------------------------------

    async def record_event(self, event_id: str, event: RayServiceEvent) -> None:
        involved = InvolvedObject(KIND_RAYSERVICE, self.name, self.namespace, api_version="ray.io/v1")
        request = RecordEvent(involved, event_id, event.reason, event.message, event.type)
        await self._act(names.RECORD_EVENT, request, str)

    def _owned(self, kinds: tuple[str, ...] | None = None) -> OwnedObjects:
        if kinds is None:
            return OwnedObjects(self.namespace, KIND_RAYSERVICE, self.name)
        return OwnedObjects(self.namespace, KIND_RAYSERVICE, self.name, kinds=kinds)

    async def delete_owned(self) -> list[dict[str, str]]:
        return list(await self._act(names.DELETE_OWNED_OBJECTS, self._owned(), list[dict[str, str]]))

    async def list_owned(self) -> list[dict[str, str]]:
        return list(await self._act(names.LIST_OWNED_OBJECTS, self._owned(), list[dict[str, str]]))

    # ---- Gateway API (incremental upgrades) ----------------------------------------------------------

    async def create_gateway(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._act(names.CREATE_GATEWAY, CreateObject(body, self.ownership), dict))

    async def update_gateway_spec(self, name: str, spec: dict[str, Any]) -> None:
        await self._act(names.UPDATE_GATEWAY_SPEC, UpdateSpec(self.namespace, name, spec), dict)

    async def create_http_route(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._act(names.CREATE_HTTPROUTE, CreateObject(body, self.ownership), dict))

    async def get_http_route(self, name: str) -> dict[str, Any] | None:
        found = await self._act(names.GET_HTTPROUTE, ObjectKey(self.namespace, name), dict)
        return dict(found) if found is not None else None

    async def update_http_route_spec(self, name: str, spec: dict[str, Any]) -> dict[str, Any] | None:
        found = await self._act(names.UPDATE_HTTPROUTE_SPEC, UpdateSpec(self.namespace, name, spec), dict)
        return dict(found) if found is not None else None

    async def create_per_cluster_service(self, body: dict[str, Any]) -> dict[str, Any]:
        # Owned by its RayCluster (the body carries the ownerReference); ownership labels added as well.
        return await self.create_service(body)

    # ---- waits ------------------------------------------------------------------------------------------

    def _start_wait(
        self, activity: str, arg: Any, result_type: type, summary: str
    ) -> workflow.ActivityHandle[Any]:
        return workflow.start_activity(
            activity,
            arg,
            result_type=result_type,
            start_to_close_timeout=WAIT_ATTEMPT,
            heartbeat_timeout=WAIT_HEARTBEAT,
            retry_policy=WAIT_RETRY,
            summary=summary,
            # Continue-as-new waits for cancelled waits to be confirmed (see RayServiceWorld.stop).
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )

    def wait_head_ready(self, cluster: str) -> workflow.ActivityHandle[Observation]:
        request = WaitRayCluster(self.namespace, cluster, until="head_ready")
        return self._start_wait(names.WAIT_RAYCLUSTER, request, Observation, f"head Pod of {cluster} ready")

    def wait_cluster_change(
        self, cluster: str, last_view: dict[str, Any] | None
    ) -> workflow.ActivityHandle[Observation]:
        request = WaitRayCluster(self.namespace, cluster, last_view=last_view, until="change")
        return self._start_wait(names.WAIT_RAYCLUSTER, request, Observation, f"RayCluster {cluster} changes")

    def wait_serve(
        self, target: DashboardTarget, cluster: str, serve_port: int, last_view: dict[str, Any] | None
    ) -> workflow.ActivityHandle[ServeObservation]:
        request = WaitServe(target, cluster, serve_port, True, last_view, SERVE_POLL_SECONDS)
        return self._start_wait(names.WAIT_SERVE, request, ServeObservation, f"Serve of {cluster} changes")

    def read_replica_ranks(
        self, target: DashboardTarget, cluster: str, submission_id: str
    ) -> workflow.ActivityHandle[ReplicaRanks]:
        return workflow.start_activity(
            names.READ_REPLICA_RANKS,
            ReadReplicaRanks(target, submission_id),
            result_type=ReplicaRanks,
            start_to_close_timeout=RANKS_ATTEMPT,
            heartbeat_timeout=WAIT_HEARTBEAT,
            retry_policy=RANKS_RETRY,
            summary=f"Serve replica ranks of {cluster}",
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )

    def wait_ready_endpoints(
        self, services: list[str], last_counts: dict[str, int]
    ) -> workflow.ActivityHandle[dict[str, int]]:
        request = WaitReadyEndpoints(self.namespace, services, last_counts)
        return self._start_wait(names.WAIT_READY_ENDPOINTS, request, dict[str, int], "serve endpoints change")

    def wait_gateway(
        self, gateway: str, route: str | None, last_view: dict[str, Any] | None
    ) -> workflow.ActivityHandle[GatewayObservation]:
        request = WaitGateway(self.namespace, gateway, route, last_view, until="change")
        return self._start_wait(names.WAIT_GATEWAY, request, GatewayObservation, "Gateway/HTTPRoute status")
