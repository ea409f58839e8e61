"""A typed stub of every activity the worker registers: workflows call these, never a name string.

`workflow.execute_activity(stubs.get_raycluster, key, ...)` schedules the activity registered under
`names.GET_RAYCLUSTER`; the stub's parameter and return annotations let mypy check the argument and the
result, and Temporal decodes the result into the annotated type (no `result_type` by hand). Each stub's
docstring names its implementation in `activities/`, and `tests/architecture/test_activity_stubs.py` checks
that both agree (name, parameter type, result type). Stubs are declared `async` whatever the implementation
is: the workflow only awaits the call's result.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from models.operator import OperatorConfig
from wire import names
from wire.admission import AdmissionAnswer, AdmissionRequest, AdmissionTicket, OpenRuns
from wire.analysis import HttpProbeRequest, HttpProbeSamples, PrometheusAnswer, PrometheusRequest
from wire.cronjob import CronJobKey, CronJobRuns, RayJobRunRef
from wire.dashboard import (
    DashboardTarget,
    HeadServeHealth,
    JobInfoAnswer,
    JobLogs,
    PutServeConfig,
    RayJobKey,
    ReadReplicaRanks,
    ReplicaRanks,
    ServeObservation,
    StopJobResult,
    SubmitJob,
    SubmitJobResult,
    SubmittedJob,
    WaitRayJob,
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
    EarlierRun,
    EarlierRuns,
    GatewayObservation,
    HeadPodKey,
    ListObjects,
    ObjectKey,
    Observation,
    OwnedObjects,
    PodLabels,
    PodsObservation,
    RayResourceKey,
    RecordEvent,
    ServiceEndpoints,
    UpdateSpec,
    WaitClusterPods,
    WaitGateway,
    WaitObject,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.kubernetes_observer import ObjectWatch, ObserveKubernetes
from wire.observer import JobWatch, ObserveJobs

_STUB = "a stub: the worker runs the implementation registered under this name"


@activity.defn(name=names.READ_OPERATOR_CONFIG)
async def read_operator_config() -> OperatorConfig:
    """`activities.config.read_operator_config`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_RAYCLUSTER)
async def create_raycluster(request: CreateObject) -> dict[str, Any]:
    """`activities.kubernetes.RayClusterActivities.create_raycluster`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_RAYCLUSTER)
async def get_raycluster(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes.RayClusterActivities.get_raycluster`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_RAYCLUSTER_SPEC)
async def update_raycluster_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.kubernetes.RayClusterActivities.update_raycluster_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.SUSPEND_WORKER_GROUPS)
async def suspend_worker_groups(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes.RayClusterActivities.suspend_worker_groups`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_RAYCLUSTER)
async def delete_raycluster(request: DeleteObject) -> bool:
    """`activities.kubernetes.RayClusterActivities.delete_raycluster`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_RAYCLUSTERS)
async def list_rayclusters(request: ListObjects) -> list[dict[str, Any]]:
    """`activities.kubernetes.RayClusterActivities.list_rayclusters`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_SERVICE)
async def create_service(request: CreateObject) -> dict[str, Any]:
    """`activities.kubernetes.ServiceActivities.create_service`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_SERVICE)
async def get_service(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes.ServiceActivities.get_service`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_SERVICE_SPEC)
async def update_service_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.kubernetes.ServiceActivities.update_service_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_SERVICE)
async def delete_service(request: DeleteObject) -> bool:
    """`activities.kubernetes.ServiceActivities.delete_service`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.COUNT_READY_ENDPOINTS)
async def count_ready_endpoints(request: ServiceEndpoints) -> int:
    """`activities.kubernetes.ServiceActivities.count_ready_endpoints`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_JOB)
async def create_job(request: CreateObject) -> dict[str, Any]:
    """`activities.kubernetes_workloads.WorkloadActivities.create_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_JOB)
async def get_job(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.kubernetes_workloads.WorkloadActivities.get_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_JOB)
async def delete_job(request: DeleteObject) -> bool:
    """`activities.kubernetes_workloads.WorkloadActivities.delete_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_HEAD_POD)
async def get_head_pod(key: HeadPodKey) -> dict[str, Any] | None:
    """`activities.kubernetes_workloads.WorkloadActivities.get_head_pod`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.PATCH_POD_LABELS)
async def patch_pod_labels(request: PodLabels) -> dict[str, Any] | None:
    """`activities.kubernetes_workloads.WorkloadActivities.patch_pod_labels`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_CLUSTER_PODS)
async def list_cluster_pods(key: ClusterPods) -> list[dict[str, Any]]:
    """`activities.kubernetes_workloads.WorkloadActivities.list_cluster_pods`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_POD)
async def delete_pod(request: DeleteObject) -> bool:
    """`activities.kubernetes_workloads.WorkloadActivities.delete_pod`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.RECORD_EVENT)
async def record_event(request: RecordEvent) -> str:
    """`activities.kubernetes_events.EventActivities.record_event`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_OWNED_OBJECTS)
async def list_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
    """`activities.kubernetes_events.OwnershipActivities.list_owned_objects`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_OWNED_OBJECTS)
async def delete_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
    """`activities.kubernetes_events.OwnershipActivities.delete_owned_objects`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_RAY_RESOURCE)
async def delete_ray_resource(key: RayResourceKey) -> bool:
    """`activities.kubernetes_events.OwnershipActivities.delete_ray_resource`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_GATEWAY)
async def create_gateway(request: CreateObject) -> dict[str, Any]:
    """`activities.gateway.GatewayActivities.create_gateway`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_GATEWAY)
async def get_gateway(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.get_gateway`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_GATEWAY_SPEC)
async def update_gateway_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.update_gateway_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_GATEWAY)
async def delete_gateway(request: DeleteObject) -> bool:
    """`activities.gateway.GatewayActivities.delete_gateway`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_HTTPROUTE)
async def create_httproute(request: CreateObject) -> dict[str, Any]:
    """`activities.gateway.GatewayActivities.create_httproute`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_HTTPROUTE)
async def get_httproute(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.get_httproute`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_HTTPROUTE_SPEC)
async def update_httproute_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.update_httproute_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_HTTPROUTE)
async def delete_httproute(request: DeleteObject) -> bool:
    """`activities.gateway.GatewayActivities.delete_httproute`"""
    raise NotImplementedError(_STUB)


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


@activity.defn(name=names.LATEST_EARLIER_RUN)
async def latest_earlier_run(request: EarlierRuns) -> EarlierRun | None:
    """`activities.temporal_runs.TemporalRunActivities.latest_earlier_run`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.LIST_CRONJOB_RUNS)
async def list_cronjob_runs(request: CronJobKey) -> CronJobRuns:
    """`activities.cronjob_runs.CronJobRunActivities.list_cronjob_runs`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_FINISHED_RAYJOB)
async def delete_finished_rayjob(request: RayJobRunRef) -> bool:
    """`activities.cronjob_runs.CronJobRunActivities.delete_finished_rayjob`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.REQUEST_RAYJOB_DELETION)
async def request_rayjob_deletion(request: RayJobRunRef) -> bool:
    """`activities.cronjob_runs.CronJobRunActivities.request_rayjob_deletion`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.ENQUEUE_FOR_ADMISSION)
async def enqueue_for_admission(request: AdmissionRequest) -> AdmissionAnswer:
    """`activities.admission.AdmissionActivities.enqueue_for_admission`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CLOSED_RUNS)
async def closed_runs(request: OpenRuns) -> list[AdmissionTicket]:
    """`activities.admission.AdmissionActivities.closed_runs`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WAIT_RUNS_CLOSED)
async def wait_runs_closed(request: OpenRuns) -> list[AdmissionTicket]:
    """`activities.admission.AdmissionActivities.wait_runs_closed`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.READ_SERVE_REQUESTS_IN_FLIGHT)
async def read_serve_requests_in_flight(request: ServeRequestsInFlight) -> int | None:
    """`activities.serve_drain.ServeDrainActivities.read_serve_requests_in_flight`"""


@activity.defn(name=names.WAIT_SERVE_REQUESTS_IN_FLIGHT)
async def wait_serve_requests_in_flight(request: WaitServeRequestsInFlight) -> int | None:
    """`activities.serve_drain.ServeDrainActivities.wait_serve_requests_in_flight`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WATCH_RAY_JOB)
async def watch_job(request: JobWatch) -> bool:
    """`activities.observer.ObserverActivities.watch_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CLOSE_SERVE_CONNECTIONS)
async def close_serve_connections(request: CloseServeConnections) -> ServeConnectionsClosing:
    """`activities.serve_connections.ServeConnectionActivities.close_serve_connections`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.OBSERVE_RAY_JOBS)
async def observe_jobs(request: ObserveJobs) -> None:
    """`activities.observer.ObserverActivities.observe_jobs`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.PROBE_HTTP)
async def probe_http(request: HttpProbeRequest) -> HttpProbeSamples:
    """`activities.analysis.AnalysisActivities.probe_http`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.QUERY_PROMETHEUS)
async def query_prometheus(request: PrometheusRequest) -> PrometheusAnswer:
    """`activities.analysis.AnalysisActivities.query_prometheus`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WATCH_K8S_OBJECT)
async def watch_object(request: ObjectWatch) -> bool:
    """`activities.kubernetes_observer.KubernetesObserverActivities.watch_object`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.OBSERVE_K8S_NAMESPACE)
async def observe_namespace(request: ObserveKubernetes) -> None:
    """`activities.kubernetes_observer.KubernetesObserverActivities.observe_namespace`"""
    raise NotImplementedError(_STUB)
