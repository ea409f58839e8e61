"""The stubs of the activities that act on Kubernetes objects (RayClusters, Services, Jobs, Pods, Events,
owned objects) and read the operator's configuration.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from models.operator import OperatorConfig
from wire import names
from wire.kubernetes import (
    ClusterPods,
    CreateObject,
    DeleteObject,
    HeadPodKey,
    ListObjects,
    ObjectKey,
    OwnedObjects,
    PodLabels,
    RayResourceKey,
    RecordEvent,
    ServiceEndpoints,
    UpdateSpec,
)
from wire.stubs.common import STUB_MESSAGE as _STUB


@activity.defn(name=names.READ_OPERATOR_CONFIG)
async def read_operator_config() -> OperatorConfig:
    """`activities.config.read_operator_config`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_RAYCLUSTER)
async def create_raycluster(request: CreateObject) -> dict[str, Any]:
    """`activities.kubernetes.clusters.RayClusterActivities.create_raycluster`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_RAYCLUSTER)
async def get_raycluster(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes.clusters.RayClusterActivities.get_raycluster`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_RAYCLUSTER_SPEC)
async def update_raycluster_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.kubernetes.clusters.RayClusterActivities.update_raycluster_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.SUSPEND_WORKER_GROUPS)
async def suspend_worker_groups(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes.clusters.RayClusterActivities.suspend_worker_groups`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_RAYCLUSTER)
async def delete_raycluster(request: DeleteObject) -> bool:
    """`activities.kubernetes.clusters.RayClusterActivities.delete_raycluster`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_RAYCLUSTERS)
async def list_rayclusters(request: ListObjects) -> list[dict[str, Any]]:
    """`activities.kubernetes.clusters.RayClusterActivities.list_rayclusters`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_SERVICE)
async def create_service(request: CreateObject) -> dict[str, Any]:
    """`activities.kubernetes.clusters.ServiceActivities.create_service`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_SERVICE)
async def get_service(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes.clusters.ServiceActivities.get_service`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_SERVICE_SPEC)
async def update_service_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.kubernetes.clusters.ServiceActivities.update_service_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_SERVICE)
async def delete_service(request: DeleteObject) -> bool:
    """`activities.kubernetes.clusters.ServiceActivities.delete_service`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.COUNT_READY_ENDPOINTS)
async def count_ready_endpoints(request: ServiceEndpoints) -> int:
    """`activities.kubernetes.clusters.ServiceActivities.count_ready_endpoints`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_JOB)
async def create_job(request: CreateObject) -> dict[str, Any]:
    """`activities.kubernetes.workloads.WorkloadActivities.create_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_JOB)
async def get_job(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes.workloads.WorkloadActivities.get_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_JOB)
async def delete_job(request: DeleteObject) -> bool:
    """`activities.kubernetes.workloads.WorkloadActivities.delete_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_HEAD_POD)
async def get_head_pod(key: HeadPodKey) -> dict[str, Any] | None:
    """`activities.kubernetes.workloads.WorkloadActivities.get_head_pod`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.PATCH_POD_LABELS)
async def patch_pod_labels(request: PodLabels) -> dict[str, Any] | None:
    """`activities.kubernetes.workloads.WorkloadActivities.patch_pod_labels`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_CLUSTER_PODS)
async def list_cluster_pods(key: ClusterPods) -> list[dict[str, Any]]:
    """`activities.kubernetes.workloads.WorkloadActivities.list_cluster_pods`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_POD)
async def delete_pod(request: DeleteObject) -> bool:
    """`activities.kubernetes.workloads.WorkloadActivities.delete_pod`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.RECORD_EVENT)
async def record_event(request: RecordEvent) -> str:
    """`activities.kubernetes.events.EventActivities.record_event`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_OWNED_OBJECTS)
async def list_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
    """`activities.kubernetes.events.OwnershipActivities.list_owned_objects`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_OWNED_OBJECTS)
async def delete_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
    """`activities.kubernetes.events.OwnershipActivities.delete_owned_objects`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_RAY_RESOURCE)
async def delete_ray_resource(key: RayResourceKey) -> bool:
    """`activities.kubernetes.events.OwnershipActivities.delete_ray_resource`"""
    raise NotImplementedError(_STUB)
