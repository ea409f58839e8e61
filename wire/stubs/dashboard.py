"""The stubs of the activities that talk to a Ray head: the dashboard's Jobs and Serve REST APIs, the Serve
replicas' ranks, and the serving proxy's requests and connections while a cluster drains.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from wire import names
from wire.dashboard import (
    DashboardTarget,
    HeadServeHealth,
    JobInfoAnswer,
    JobLogs,
    PutServeConfig,
    RayJobKey,
    ReadReplicaRanks,
    ReplicaRanks,
    StopJobResult,
    SubmitJob,
    SubmitJobResult,
    SubmittedJob,
)
from wire.drain import (
    CloseServeConnections,
    ServeConnectionsClosing,
    ServeRequestsInFlight,
    WaitServeRequestsInFlight,
)
from wire.stubs.common import STUB_MESSAGE as _STUB


@activity.defn(name=names.SUBMIT_JOB)
async def submit_job(request: SubmitJob) -> SubmitJobResult:
    """`activities.dashboard.DashboardActivities.submit_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_JOB_INFO)
async def get_job_info(key: RayJobKey) -> JobInfoAnswer:
    """`activities.dashboard.DashboardActivities.get_job_info`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_SUBMITTED_JOBS)
async def list_submitted_jobs(target: DashboardTarget) -> list[SubmittedJob]:
    """`activities.dashboard.DashboardActivities.list_submitted_jobs`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.STOP_JOB)
async def stop_job(key: RayJobKey) -> StopJobResult:
    """`activities.dashboard.DashboardActivities.stop_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_RAY_JOB)
async def delete_ray_job(key: RayJobKey) -> bool:
    """`activities.dashboard.DashboardActivities.delete_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_JOB_LOGS)
async def get_job_logs(request: JobLogs) -> str:
    """`activities.dashboard.DashboardActivities.get_job_logs`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_SERVE_APPLICATIONS)
async def get_serve_applications(target: DashboardTarget) -> dict[str, Any]:
    """`activities.dashboard.DashboardActivities.get_serve_applications`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.PUT_SERVE_CONFIG)
async def put_serve_config(request: PutServeConfig) -> None:
    """`activities.dashboard.DashboardActivities.put_serve_config`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CHECK_SERVE_HEALTH)
async def check_serve_health(head: HeadServeHealth) -> bool:
    """`activities.dashboard.DashboardActivities.check_serve_health`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.READ_REPLICA_RANKS)
async def read_replica_ranks(request: ReadReplicaRanks) -> ReplicaRanks:
    """`activities.replica_ranks.ReplicaRankActivities.read_replica_ranks`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.READ_SERVE_REQUESTS_IN_FLIGHT)
async def read_serve_requests_in_flight(request: ServeRequestsInFlight) -> int | None:
    """`activities.serve_drain.ServeDrainActivities.read_serve_requests_in_flight`"""


@activity.defn(name=names.WAIT_SERVE_REQUESTS_IN_FLIGHT)
async def wait_serve_requests_in_flight(request: WaitServeRequestsInFlight) -> int | None:
    """`activities.serve_drain.ServeDrainActivities.wait_serve_requests_in_flight`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CLOSE_SERVE_CONNECTIONS)
async def close_serve_connections(request: CloseServeConnections) -> ServeConnectionsClosing:
    """`activities.serve_connections.ServeConnectionActivities.close_serve_connections`"""
    raise NotImplementedError(_STUB)
