"""Every activity the worker registers, declared once with its name and types: workflows call these, never a
name string.

`call(stubs.get_raycluster, key, IO.STEP)` (`workflows.kit.calls`) schedules the activity registered under
`names.GET_RAYCLUSTER`; mypy checks the argument and the result against the declaration's types, and Temporal
decodes the result into the declared result type. The implementation in `activities/` is declared
`@implements(stubs.get_raycluster)` (`wire.stubs.common`): registered under the declared name, its types held
to the declared ones by mypy (`grep -rn "implements(stubs.get_raycluster)"` finds it).
"""

from __future__ import annotations

from typing import Any

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
from wire.driver_log import DriverLogSaved, SaveDriverLog
from wire.kubernetes import (
    ClusterPods,
    CreateObject,
    DeleteObject,
    EarlierRun,
    EarlierRuns,
    GatewayObservation,
    HeadPodKey,
    ListObjects,
    Observation,
    OwnedObjects,
    PatchRoute,
    PodLabels,
    PodsObservation,
    RayResourceKey,
    RecordEvent,
    RoutePatched,
    RunStart,
    ServiceEndpoints,
    UpdateSpec,
    WaitClusterPods,
    WaitGateway,
    WaitObject,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.kubernetes import ObjectKey as ObjectKey  # the key most activities take, as `stubs.ObjectKey`
from wire.kubernetes_observer import ObjectWatch, ObserveKubernetes
from wire.notify import SendNotification
from wire.observer import JobWatch, ObserveJobs
from wire.stubs.common import Activity, ActivityWithoutInput

# The operator's configuration, then Kubernetes objects (RayClusters, Services, Jobs, Pods, Events, owned
# objects).
read_operator_config = ActivityWithoutInput[OperatorConfig](names.READ_OPERATOR_CONFIG)
create_raycluster = Activity[CreateObject, dict[str, Any]](names.CREATE_RAYCLUSTER)
get_raycluster = Activity[ObjectKey, dict[str, Any] | None](names.GET_RAYCLUSTER)
update_raycluster_spec = Activity[UpdateSpec, dict[str, Any] | None](names.UPDATE_RAYCLUSTER_SPEC)
suspend_worker_groups = Activity[ObjectKey, dict[str, Any] | None](names.SUSPEND_WORKER_GROUPS)
delete_raycluster = Activity[DeleteObject, bool](names.DELETE_RAYCLUSTER)
list_rayclusters = Activity[ListObjects, list[dict[str, Any]]](names.LIST_RAYCLUSTERS)
create_service = Activity[CreateObject, dict[str, Any]](names.CREATE_SERVICE)
get_service = Activity[ObjectKey, dict[str, Any] | None](names.GET_SERVICE)
update_service_spec = Activity[UpdateSpec, dict[str, Any] | None](names.UPDATE_SERVICE_SPEC)
delete_service = Activity[DeleteObject, bool](names.DELETE_SERVICE)
count_ready_endpoints = Activity[ServiceEndpoints, int](names.COUNT_READY_ENDPOINTS)
create_job = Activity[CreateObject, dict[str, Any]](names.CREATE_JOB)
get_job = Activity[ObjectKey, dict[str, Any] | None](names.GET_JOB)
delete_job = Activity[DeleteObject, bool](names.DELETE_JOB)
get_head_pod = Activity[HeadPodKey, dict[str, Any] | None](names.GET_HEAD_POD)
patch_pod_labels = Activity[PodLabels, dict[str, Any] | None](names.PATCH_POD_LABELS)
list_cluster_pods = Activity[ClusterPods, list[dict[str, Any]]](names.LIST_CLUSTER_PODS)
delete_pod = Activity[DeleteObject, bool](names.DELETE_POD)
record_event = Activity[RecordEvent, str](names.RECORD_EVENT)
list_owned_objects = Activity[OwnedObjects, list[dict[str, str]]](names.LIST_OWNED_OBJECTS)
delete_owned_objects = Activity[OwnedObjects, list[dict[str, str]]](names.DELETE_OWNED_OBJECTS)
delete_ray_resource = Activity[RayResourceKey, bool](names.DELETE_RAY_RESOURCE)

# Gateway API objects (Gateways, HTTPRoutes).
create_gateway = Activity[CreateObject, dict[str, Any]](names.CREATE_GATEWAY)
get_gateway = Activity[ObjectKey, dict[str, Any] | None](names.GET_GATEWAY)
update_gateway_spec = Activity[UpdateSpec, dict[str, Any] | None](names.UPDATE_GATEWAY_SPEC)
delete_gateway = Activity[DeleteObject, bool](names.DELETE_GATEWAY)
create_httproute = Activity[CreateObject, dict[str, Any]](names.CREATE_HTTPROUTE)
get_httproute = Activity[ObjectKey, dict[str, Any] | None](names.GET_HTTPROUTE)
update_httproute_spec = Activity[UpdateSpec, dict[str, Any] | None](names.UPDATE_HTTPROUTE_SPEC)
delete_httproute = Activity[DeleteObject, bool](names.DELETE_HTTPROUTE)
patch_httproute = Activity[PatchRoute, RoutePatched](names.PATCH_HTTPROUTE)
get_namespace_labels = Activity[str, dict[str, str] | None](names.GET_NAMESPACE_LABELS)

# A Ray head: the dashboard's Jobs and Serve REST APIs, the Serve replicas' ranks, the serving proxies'
# requests and connections while a cluster drains.
submit_job = Activity[SubmitJob, SubmitJobResult](names.SUBMIT_JOB)
get_job_info = Activity[RayJobKey, JobInfoAnswer](names.GET_JOB_INFO)
list_submitted_jobs = Activity[DashboardTarget, list[SubmittedJob]](names.LIST_SUBMITTED_JOBS)
stop_job = Activity[RayJobKey, StopJobResult](names.STOP_JOB)
delete_ray_job = Activity[RayJobKey, bool](names.DELETE_RAY_JOB)
get_job_logs = Activity[JobLogs, str](names.GET_JOB_LOGS)
save_driver_log = Activity[SaveDriverLog, DriverLogSaved](names.SAVE_DRIVER_LOG)
get_serve_applications = Activity[DashboardTarget, dict[str, Any]](names.GET_SERVE_APPLICATIONS)
put_serve_config = Activity[PutServeConfig, None](names.PUT_SERVE_CONFIG)
check_serve_health = Activity[HeadServeHealth, bool](names.CHECK_SERVE_HEALTH)
read_replica_ranks = Activity[ReadReplicaRanks, ReplicaRanks](names.READ_REPLICA_RANKS)
read_serve_requests_in_flight = Activity[ServeRequestsInFlight, int | None](
    names.READ_SERVE_REQUESTS_IN_FLIGHT
)
wait_serve_requests_in_flight = Activity[WaitServeRequestsInFlight, int | None](
    names.WAIT_SERVE_REQUESTS_IN_FLIGHT
)
close_serve_connections = Activity[CloseServeConnections, ServeConnectionsClosing](
    names.CLOSE_SERVE_CONNECTIONS
)

# Waits (`activities.waits`): each returns only when what it watches differs from what the workflow last saw,
# or its target is reached, so a waiting workflow adds no history meanwhile.
wait_raycluster = Activity[WaitRayCluster, Observation](names.WAIT_RAYCLUSTER)
wait_cluster_pods = Activity[WaitClusterPods, PodsObservation](names.WAIT_CLUSTER_PODS)
wait_submitter_job = Activity[WaitObject, Observation](names.WAIT_SUBMITTER_JOB)
wait_ready_endpoints = Activity[WaitReadyEndpoints, dict[str, int]](names.WAIT_READY_ENDPOINTS)
wait_head_pod = Activity[WaitObject, Observation](names.WAIT_HEAD_POD)
wait_job = Activity[WaitRayJob, JobInfoAnswer](names.WAIT_RAY_JOB)
wait_serve = Activity[WaitServe, ServeObservation](names.WAIT_SERVE)
wait_gateway = Activity[WaitGateway, GatewayObservation](names.WAIT_GATEWAY)

# Temporal itself: a RayCronJob's runs, admission of runs, a RayJob's earlier runs, the observers
# (registering a watch, the long-lived observing activity).
latest_earlier_run = Activity[EarlierRuns, EarlierRun | None](names.LATEST_EARLIER_RUN)
read_run_start = Activity[EarlierRuns, RunStart](names.READ_RUN_START)
list_cronjob_runs = Activity[CronJobKey, CronJobRuns](names.LIST_CRONJOB_RUNS)
delete_finished_rayjob = Activity[RayJobRunRef, bool](names.DELETE_FINISHED_RAYJOB)
request_rayjob_deletion = Activity[RayJobRunRef, bool](names.REQUEST_RAYJOB_DELETION)
enqueue_for_admission = Activity[AdmissionRequest, AdmissionAnswer](names.ENQUEUE_FOR_ADMISSION)
closed_runs = Activity[OpenRuns, list[AdmissionTicket]](names.CLOSED_RUNS)
wait_runs_closed = Activity[OpenRuns, list[AdmissionTicket]](names.WAIT_RUNS_CLOSED)
watch_job = Activity[JobWatch, bool](names.WATCH_RAY_JOB)
observe_jobs = Activity[ObserveJobs, None](names.OBSERVE_RAY_JOBS)
watch_object = Activity[ObjectWatch, bool](names.WATCH_K8S_OBJECT)
observe_namespace = Activity[ObserveKubernetes, None](names.OBSERVE_K8S_NAMESPACE)

# The analysis gates' measurements (an HTTP probe, a Prometheus query).
probe_http = Activity[HttpProbeRequest, HttpProbeSamples](names.PROBE_HTTP)
query_prometheus = Activity[PrometheusRequest, PrometheusAnswer](names.QUERY_PROMETHEUS)

# A webhook notification (raypilot.io/notify): the URL read from its Secret, one POST; the answer's status.
send_notification = Activity[SendNotification, int](names.SEND_NOTIFICATION)
