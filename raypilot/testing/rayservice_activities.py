"""The fake activities of the RayService fake world (`raypilot.testing.rayservice_world.FakeRayWorld`),
registered under the real activity names: RayClusters, Services, Pods, Serve configs, the Gateway and its
HTTPRoute, all kept in the world's memory. Waits return when the view differs from the workflow's last one and
otherwise raise the world's benign `Unchanged` error."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from models.operator import OperatorConfig
from raypilot.testing.rayservice_cluster import FakeCluster
from raypilot.testing.rayservice_shared_routes import shared_wait
from raypilot.testing.rayservice_world_state import FakeRayWorldState
from wire import names
from wire.dashboard import PutServeConfig, ServeObservation, WaitServe
from wire.kubernetes import (
    ClusterPods,
    CreateObject,
    DeleteObject,
    GatewayObservation,
    ObjectKey,
    Observation,
    OwnedObjects,
    PodLabels,
    PodsObservation,
    RecordEvent,
    ServiceEndpoints,
    UpdateSpec,
    WaitClusterPods,
    WaitGateway,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.names import READ_OPERATOR_CONFIG
from wire.views import cluster_pods_view, gateway_view, raycluster_view


def fake_rayservice_activities(world: FakeRayWorldState) -> list[Any]:
    """The world's activities, each registered under its real name."""

    @activity.defn(name=READ_OPERATOR_CONFIG)
    async def read_operator_config() -> OperatorConfig:
        return world.config

    @activity.defn(name=names.CREATE_RAYCLUSTER)
    async def create_raycluster(request: CreateObject) -> dict[str, Any]:
        body = copy.deepcopy(request.body)
        name = body["metadata"]["name"]
        if name not in world.clusters:
            body["metadata"]["uid"] = world._next_uid()
            if request.ownership is not None:
                body["metadata"].setdefault("labels", {}).update(request.ownership.labels())
            world.clusters[name] = FakeCluster(
                body, head_ready=world.heads_start_ready, serve_mode=world.serve_mode_for_new_clusters
            )
            world.clusters[name].pods()  # the Pods run the spec they were created from
            world._record("create", "RayCluster", name, body)
        return world.clusters[name].obj()

    @activity.defn(name=names.GET_RAYCLUSTER)
    async def get_raycluster(key: ObjectKey) -> dict[str, Any] | None:
        found = world.clusters.get(key.name)
        return found.obj() if found is not None else None

    @activity.defn(name=names.UPDATE_RAYCLUSTER_SPEC)
    async def update_raycluster_spec(request: UpdateSpec) -> dict[str, Any] | None:
        found = world.clusters.get(request.name)
        if found is None:
            return None
        found.body["spec"] = copy.deepcopy(request.spec)
        for key, changes in (("labels", request.labels), ("annotations", request.annotations)):
            current = found.body["metadata"].setdefault(key, {})
            for label, value in changes.items():
                if value is None:
                    current.pop(label, None)
                else:
                    current[label] = value
        world._record("update", "RayCluster", request.name, copy.deepcopy(request.spec))
        return found.obj()

    @activity.defn(name=names.DELETE_RAYCLUSTER)
    async def delete_raycluster(request: DeleteObject) -> bool:
        if world.clusters.pop(request.name, None) is None:
            return False
        world.deleted_clusters.append(request.name)
        world._record("delete", "RayCluster", request.name)
        return True

    @activity.defn(name=names.CREATE_SERVICE)
    async def create_service(request: CreateObject) -> dict[str, Any]:
        name = request.body["metadata"]["name"]
        if name not in world.services:
            world.services[name] = copy.deepcopy(request.body)
            world._record("create", "Service", name, copy.deepcopy(request.body))
        return copy.deepcopy(world.services[name])

    @activity.defn(name=names.UPDATE_SERVICE_SPEC)
    async def update_service_spec(request: UpdateSpec) -> dict[str, Any] | None:
        found = world.services.get(request.name)
        if found is None:
            return None
        found["spec"] = copy.deepcopy(request.spec)
        world._record("update", "Service", request.name, copy.deepcopy(request.spec))
        return copy.deepcopy(found)

    @activity.defn(name=names.COUNT_READY_ENDPOINTS)
    async def count_ready_endpoints(request: ServiceEndpoints) -> int:
        return world._endpoints(request.service_name)

    @activity.defn(name=names.PATCH_POD_LABELS)
    async def patch_pod_labels(request: PodLabels) -> dict[str, Any] | None:
        for cluster in world.clusters.values():
            pod = cluster.head_pod()
            if pod is not None and pod["metadata"]["name"] == request.name:
                for key, value in request.labels.items():
                    if value is not None:
                        cluster.head_labels[key] = value
                world._record("label", "Pod", request.name, dict(request.labels))
                return cluster.head_pod()
        return None

    @activity.defn(name=names.LIST_CLUSTER_PODS)
    async def list_cluster_pods(request: ClusterPods) -> list[dict[str, Any]]:
        found = world.clusters.get(request.cluster_name)
        return found.pods() if found is not None else []

    @activity.defn(name=names.DELETE_POD)
    async def delete_pod(request: DeleteObject) -> bool:
        for cluster in world.clusters.values():
            for pod in cluster.pods():
                if pod["metadata"]["uid"] != request.uid:
                    continue
                world._record("delete", "Pod", request.name)
                if world.serve_mode_after_pod_delete is not None:
                    cluster.serve_mode = world.serve_mode_after_pod_delete
                group = pod["metadata"]["labels"]["ray.io/group"]
                if group == "headgroup":
                    world.restart_head(cluster.name)
                else:
                    cluster.worker_generations[group] += 1
                return True
        return False

    @activity.defn(name=names.PUT_SERVE_CONFIG)
    async def put_serve_config(request: PutServeConfig) -> None:
        cluster = request.target.head_service.removesuffix("-head-svc")
        if world.reject_serve_config:
            raise ApplicationError("UpdateDeployments fail: 400 bad config", non_retryable=True)
        world.clusters[cluster].config = copy.deepcopy(request.config)
        world._record("put", "ServeConfig", cluster, copy.deepcopy(request.config))

    @activity.defn(name=names.RECORD_EVENT)
    async def record_event(request: RecordEvent) -> str:
        world.events.append(request)
        return request.event_id

    @activity.defn(name=names.DELETE_OWNED_OBJECTS)
    async def delete_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
        owned = world._owned(request)
        for ref in owned:
            if ref["kind"] == "RayCluster":
                world.clusters.pop(ref["name"], None)
                world.deleted_clusters.append(ref["name"])
            elif ref["kind"] == "Service":
                world.services.pop(ref["name"], None)
            elif ref["kind"] == "Gateway":
                world.gateway = None
            else:
                world.route = None
            world._record("delete", ref["kind"], ref["name"])
        return owned

    @activity.defn(name=names.LIST_OWNED_OBJECTS)
    async def list_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
        return world._owned(request)

    @activity.defn(name=names.WAIT_RAYCLUSTER)
    async def wait_raycluster(request: WaitRayCluster) -> Observation:
        found = world.clusters.get(request.name)
        obj = found.obj() if found is not None else None
        view = raycluster_view(obj)
        if obj is not None:
            del obj["spec"]  # waits return metadata and status only
        if found is None or (request.until == "head_ready" and found.head_ready):
            return Observation(obj, view)
        if request.until == "change" and view != request.last_view:
            return Observation(obj, view)
        raise world._unchanged()

    @activity.defn(name=names.WAIT_SERVE)
    async def wait_serve(request: WaitServe) -> ServeObservation:
        if world.serve_waits_lost and request.last_view is not None:
            world.serve_wait_lost.set()
            await asyncio.Future()  # until the worker shuts down
        observation = world._serve_observation(request.cluster_name)
        if observation.view != request.last_view:
            return observation
        raise world._unchanged()

    @activity.defn(name=names.WAIT_CLUSTER_PODS)
    async def wait_cluster_pods(request: WaitClusterPods) -> PodsObservation:
        found = world.clusters.get(request.cluster_name)
        pods = found.pods() if found is not None else []
        view = cluster_pods_view(pods)
        if view != request.last_view:
            return PodsObservation(pods, view)
        raise world._unchanged()

    @activity.defn(name=names.WAIT_READY_ENDPOINTS)
    async def wait_ready_endpoints(request: WaitReadyEndpoints) -> dict[str, int]:
        counts = {name: world._endpoints(name) for name in request.service_names}
        if counts != request.last_counts:
            return counts
        raise world._unchanged()

    @activity.defn(name=names.CREATE_GATEWAY)
    async def create_gateway(request: CreateObject) -> dict[str, Any]:
        if world.gateway is None:
            world.gateway = copy.deepcopy(request.body)
            world.gateway["status"] = {
                "conditions": [
                    {"type": "Accepted", "status": "True"},
                    {"type": "Programmed", "status": "True"},
                ]
            }
            world._record("create", "Gateway", request.body["metadata"]["name"])
        return copy.deepcopy(world.gateway)

    @activity.defn(name=names.UPDATE_GATEWAY_SPEC)
    async def update_gateway_spec(request: UpdateSpec) -> dict[str, Any] | None:
        if world.gateway is None:
            return None
        world.gateway["spec"] = copy.deepcopy(request.spec)
        return copy.deepcopy(world.gateway)

    def route_status(route: dict[str, Any]) -> dict[str, Any]:
        parent = route["spec"]["parentRefs"][0]
        conditions = [{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "True"}]
        return {"parents": [{"parentRef": parent, "conditions": conditions}]}

    @activity.defn(name=names.CREATE_HTTPROUTE)
    async def create_httproute(request: CreateObject) -> dict[str, Any]:
        if world.route is None:
            world.route = copy.deepcopy(request.body)
            world.route["status"] = route_status(world.route)
            world._record("create", "HTTPRoute", request.body["metadata"]["name"], _weights(world.route))
        return copy.deepcopy(world.route)

    @activity.defn(name=names.GET_HTTPROUTE)
    async def get_httproute(key: ObjectKey) -> dict[str, Any] | None:
        if (key.namespace, key.name) in world.shared.routes:
            return world.shared.route((key.namespace, key.name))
        return copy.deepcopy(world.route)

    @activity.defn(name=names.UPDATE_HTTPROUTE_SPEC)
    async def update_httproute_spec(request: UpdateSpec) -> dict[str, Any] | None:
        if world.route is None:
            return None
        world.route["spec"] = copy.deepcopy(request.spec)
        world.route["status"] = route_status(world.route)
        world._record("update", "HTTPRoute", request.name, _weights(world.route))
        return copy.deepcopy(world.route)

    @activity.defn(name=names.WAIT_GATEWAY)
    async def wait_gateway(request: WaitGateway) -> GatewayObservation:
        if request.gateway_namespace is not None:
            return shared_wait(world, request)
        ready = world.gateway is not None and world.route is not None
        view = gateway_view(world.gateway, world.route, ready)
        if view != request.last_view:
            return GatewayObservation(copy.deepcopy(world.gateway), copy.deepcopy(world.route), ready, view)
        raise world._unchanged()

    found = [
        read_operator_config,
        create_raycluster,
        get_raycluster,
        update_raycluster_spec,
        delete_raycluster,
        create_service,
        update_service_spec,
        count_ready_endpoints,
        patch_pod_labels,
        list_cluster_pods,
        delete_pod,
        put_serve_config,
        record_event,
        delete_owned_objects,
        list_owned_objects,
        wait_raycluster,
        wait_serve,
        create_gateway,
        update_gateway_spec,
        create_httproute,
        get_httproute,
        update_httproute_spec,
        wait_gateway,
    ]
    if world.endpoints_wait_registered:
        found.append(wait_ready_endpoints)
    if world.pods_wait_registered:
        found.append(wait_cluster_pods)
    return found


def _weights(route: dict[str, Any]) -> dict[str, int]:
    refs = route["spec"]["rules"][0]["backendRefs"]
    return {str(ref["name"]): int(ref.get("weight", 1)) for ref in refs}
