"""The stubs of the wait activities (`activities.waits`): each returns only when what it watches differs from
what the workflow last saw, or its target is reached, so a waiting workflow adds no history meanwhile.
"""

from __future__ import annotations

from temporalio import activity

from wire import names
from wire.dashboard import JobInfoAnswer, ServeObservation, WaitRayJob, WaitServe
from wire.kubernetes import (
    GatewayObservation,
    Observation,
    PodsObservation,
    WaitClusterPods,
    WaitGateway,
    WaitObject,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.stubs.common import STUB_MESSAGE as _STUB


@activity.defn(name=names.WAIT_RAYCLUSTER)
async def wait_raycluster(request: WaitRayCluster) -> Observation:
    """`activities.waits.KubernetesWaits.wait_raycluster`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_CLUSTER_PODS)
async def wait_cluster_pods(request: WaitClusterPods) -> PodsObservation:
    """`activities.waits.KubernetesWaits.wait_cluster_pods`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_SUBMITTER_JOB)
async def wait_submitter_job(request: WaitObject) -> Observation:
    """`activities.waits.KubernetesWaits.wait_submitter_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_READY_ENDPOINTS)
async def wait_ready_endpoints(request: WaitReadyEndpoints) -> dict[str, int]:
    """`activities.waits.KubernetesWaits.wait_ready_endpoints`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_HEAD_POD)
async def wait_head_pod(request: WaitObject) -> Observation:
    """`activities.waits.KubernetesWaits.wait_head_pod`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_RAY_JOB)
async def wait_job(request: WaitRayJob) -> JobInfoAnswer:
    """`activities.waits.DashboardWaits.wait_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_SERVE)
async def wait_serve(request: WaitServe) -> ServeObservation:
    """`activities.waits.DashboardWaits.wait_serve`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_GATEWAY)
async def wait_gateway(request: WaitGateway) -> GatewayObservation:
    """`activities.waits.DashboardWaits.wait_gateway`"""
    raise NotImplementedError(_STUB)
