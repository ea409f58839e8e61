"""Every activity name raypilot registers. The activity declarations of `wire.stubs` carry them and each
implementation is registered under its declaration's name (`@implements`), so renaming a Python method can
never break a running workflow's history.

Prefixes: `k8s.` Kubernetes core, batch and ray.io objects; `gateway.` Gateway API objects; `dashboard.` the
Ray Dashboard REST API of one RayCluster; `temporal.` Temporal's own API (the earlier runs of a workflow id).
Waits (one long heartbeating activity that returns on change) are named `<prefix>.wait_<what>`.
"""

from __future__ import annotations

from typing import Final

# ---- the worker's operator configuration (read once per workflow) ---------------------------------------
READ_OPERATOR_CONFIG: Final = "raypilot.read_operator_config"

# ---- RayCluster ---------------------------------------------------------------------------------------
CREATE_RAYCLUSTER: Final = "k8s.create_raycluster"
GET_RAYCLUSTER: Final = "k8s.get_raycluster"
UPDATE_RAYCLUSTER_SPEC: Final = "k8s.update_raycluster_spec"
SUSPEND_WORKER_GROUPS: Final = "k8s.suspend_worker_groups"
DELETE_RAYCLUSTER: Final = "k8s.delete_raycluster"
LIST_RAYCLUSTERS: Final = "k8s.list_rayclusters"

# ---- Services and their endpoints ---------------------------------------------------------------------
CREATE_SERVICE: Final = "k8s.create_service"
GET_SERVICE: Final = "k8s.get_service"
UPDATE_SERVICE_SPEC: Final = "k8s.update_service_spec"
DELETE_SERVICE: Final = "k8s.delete_service"
COUNT_READY_ENDPOINTS: Final = "k8s.count_ready_endpoints"

# ---- batch/v1 Job (the K8sJobMode submitter) -----------------------------------------------------------
CREATE_JOB: Final = "k8s.create_job"
GET_JOB: Final = "k8s.get_job"
DELETE_JOB: Final = "k8s.delete_job"

# ---- Pods -------------------------------------------------------------------------------------------------
GET_HEAD_POD: Final = "k8s.get_head_pod"
PATCH_POD_LABELS: Final = "k8s.patch_pod_labels"
LIST_CLUSTER_PODS: Final = "k8s.list_cluster_pods"
DELETE_POD: Final = "k8s.delete_pod"
# The Serve proxies' in-flight HTTP requests of one RayCluster from its Pods' Ray metrics endpoints (asyncio
# HTTP like the dashboard calls, hence the prefix), for drained deletion.
READ_SERVE_REQUESTS_IN_FLIGHT: Final = "dashboard.read_serve_requests_in_flight"
# A short Ray job on a draining RayCluster: its Serve proxies close kept-alive connections after responses.
CLOSE_SERVE_CONNECTIONS: Final = "dashboard.close_serve_connections"

# ---- Events, ownership, the RayJob/RayService resource itself ------------------------------------------
RECORD_EVENT: Final = "k8s.record_event"
LIST_OWNED_OBJECTS: Final = "k8s.list_owned_objects"
DELETE_OWNED_OBJECTS: Final = "k8s.delete_owned_objects"
DELETE_RAY_RESOURCE: Final = "k8s.delete_ray_resource"

# ---- Gateway API --------------------------------------------------------------------------------------
CREATE_GATEWAY: Final = "gateway.create_gateway"
GET_GATEWAY: Final = "gateway.get_gateway"
UPDATE_GATEWAY_SPEC: Final = "gateway.update_gateway_spec"
DELETE_GATEWAY: Final = "gateway.delete_gateway"
CREATE_HTTPROUTE: Final = "gateway.create_httproute"
GET_HTTPROUTE: Final = "gateway.get_httproute"
UPDATE_HTTPROUTE_SPEC: Final = "gateway.update_httproute_spec"
DELETE_HTTPROUTE: Final = "gateway.delete_httproute"
# A user-owned HTTPRoute (raypilot.io/httproute): a JSON Patch of the backendRefs raypilot owns there.
PATCH_HTTPROUTE: Final = "gateway.patch_httproute"
# The labels of a namespace a shared Gateway admits routes from by a label selector (raypilot.io/gateway).
GET_NAMESPACE_LABELS: Final = "gateway.get_namespace_labels"

# ---- Ray Dashboard ------------------------------------------------------------------------------------
SUBMIT_JOB: Final = "dashboard.submit_job"
GET_JOB_INFO: Final = "dashboard.get_job_info"
LIST_SUBMITTED_JOBS: Final = "dashboard.list_submitted_jobs"
STOP_JOB: Final = "dashboard.stop_job"
DELETE_RAY_JOB: Final = "dashboard.delete_job"
GET_JOB_LOGS: Final = "dashboard.get_job_logs"
# A failed Ray job's driver log into the log store, its last lines as an Event (wire.driver_log).
SAVE_DRIVER_LOG: Final = "dashboard.save_driver_log"
GET_SERVE_APPLICATIONS: Final = "dashboard.get_serve_applications"
PUT_SERVE_CONFIG: Final = "dashboard.put_serve_config"
CHECK_SERVE_HEALTH: Final = "dashboard.check_serve_health"
READ_REPLICA_RANKS: Final = "dashboard.read_replica_ranks"

# ---- Analysis gates of raypilot.io/rollout (wire.analysis): measurements, the verdict is the workflow's --
PROBE_HTTP: Final = "analysis.probe_http"
QUERY_PROMETHEUS: Final = "analysis.query_prometheus"

# ---- Webhook notifications of raypilot.io/notify (wire.notify) ---------------------------------------------
SEND_NOTIFICATION: Final = "notify.send_notification"

# ---- Temporal (the runs of a workflow id) ------------------------------------------------------------------
LATEST_EARLIER_RUN: Final = "temporal.latest_earlier_run"
# A RayJob run's one read before its first act: the operator configuration and its id's newest earlier run.
READ_RUN_START: Final = "temporal.read_run_start"
# Queueing on a shared cluster: a slot asked of the cluster's admission workflow; which holders still run.
ENQUEUE_FOR_ADMISSION: Final = "temporal.enqueue_for_admission"
CLOSED_RUNS: Final = "temporal.closed_runs"
# Until one of the holders' runs closes (the admission workflow's wait instead of a check a minute).
WAIT_RUNS_CLOSED: Final = "temporal.wait_runs_closed"

# ---- Waits (heartbeating, return on change) ---------------------------------------------------------------
WAIT_RAYCLUSTER: Final = "k8s.wait_raycluster"
WAIT_SUBMITTER_JOB: Final = "k8s.wait_submitter_job"
WAIT_HEAD_POD: Final = "k8s.wait_head_pod"
WAIT_READY_ENDPOINTS: Final = "k8s.wait_ready_endpoints"
WAIT_RAY_JOB: Final = "dashboard.wait_job"
WAIT_SERVE: Final = "dashboard.wait_serve"
WAIT_GATEWAY: Final = "gateway.wait_ready"
# The Pods of a RayCluster whose Pods are restarted in place (raypilot.io/in-place-restart).
WAIT_CLUSTER_PODS: Final = "k8s.wait_cluster_pods"
# The in-flight requests of a draining RayCluster (raypilot.io/max-drain-seconds), read as
# READ_SERVE_REQUESTS_IN_FLIGHT reads them.
WAIT_SERVE_REQUESTS_IN_FLIGHT: Final = "dashboard.wait_serve_requests_in_flight"

# ---- RayCronJob (Temporal: the RayJobs one RayCronJob made) ----------------------------------------------
LIST_CRONJOB_RUNS: Final = "temporal.list_cronjob_runs"
DELETE_FINISHED_RAYJOB: Final = "temporal.delete_finished_rayjob"
REQUEST_RAYJOB_DELETION: Final = "temporal.request_rayjob_deletion"

# ---- The cluster observer of Ray jobs (wire.observer) -------------------------------------------------
WATCH_RAY_JOB: Final = "observer.watch_job"
OBSERVE_RAY_JOBS: Final = "observer.observe_jobs"

# ---- The Kubernetes observer of a namespace (wire.kubernetes_observer) ------------------------------------
WATCH_K8S_OBJECT: Final = "k8s_observer.watch_object"
OBSERVE_K8S_NAMESPACE: Final = "k8s_observer.observe_namespace"
