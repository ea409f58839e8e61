"""A typed stub of every activity the worker registers: workflows call these, never a name string.

`workflow.execute_activity(stubs.get_raycluster, key, ...)` schedules the activity registered under
`names.GET_RAYCLUSTER`; the stub's parameter and return annotations let mypy check the argument and the
result, and Temporal decodes the result into the annotated type (no `result_type` by hand). Each stub's
docstring names its implementation in `activities/`, which is declared `@implements(stubs.<name>)`
(`wire.stubs.common`): registered under the stub's name, its types held to the stub's by mypy. Stubs are
declared `async` whatever the implementation is: the workflow only awaits the call's result.

The stubs live by the kind of I/O their activity does (`kubernetes`, `gateway`, `dashboard`, `waits`,
`temporal`, `analysis`); this module names them all, so a workflow reaches every one as `stubs.<name>`.
"""

from __future__ import annotations

from wire.kubernetes import ObjectKey as ObjectKey  # the key most stubs take, as `stubs.ObjectKey`
from wire.stubs.analysis import probe_http as probe_http
from wire.stubs.analysis import query_prometheus as query_prometheus
from wire.stubs.dashboard import check_serve_health as check_serve_health
from wire.stubs.dashboard import close_serve_connections as close_serve_connections
from wire.stubs.dashboard import delete_ray_job as delete_ray_job
from wire.stubs.dashboard import get_job_info as get_job_info
from wire.stubs.dashboard import get_job_logs as get_job_logs
from wire.stubs.dashboard import get_serve_applications as get_serve_applications
from wire.stubs.dashboard import list_submitted_jobs as list_submitted_jobs
from wire.stubs.dashboard import put_serve_config as put_serve_config
from wire.stubs.dashboard import read_replica_ranks as read_replica_ranks
from wire.stubs.dashboard import read_serve_requests_in_flight as read_serve_requests_in_flight
from wire.stubs.dashboard import stop_job as stop_job
from wire.stubs.dashboard import submit_job as submit_job
from wire.stubs.dashboard import wait_serve_requests_in_flight as wait_serve_requests_in_flight
from wire.stubs.gateway import create_gateway as create_gateway
from wire.stubs.gateway import create_httproute as create_httproute
from wire.stubs.gateway import delete_gateway as delete_gateway
from wire.stubs.gateway import delete_httproute as delete_httproute
from wire.stubs.gateway import get_gateway as get_gateway
from wire.stubs.gateway import get_httproute as get_httproute
from wire.stubs.gateway import update_gateway_spec as update_gateway_spec
from wire.stubs.gateway import update_httproute_spec as update_httproute_spec
from wire.stubs.kubernetes import count_ready_endpoints as count_ready_endpoints
from wire.stubs.kubernetes import create_job as create_job
from wire.stubs.kubernetes import create_raycluster as create_raycluster
from wire.stubs.kubernetes import create_service as create_service
from wire.stubs.kubernetes import delete_job as delete_job
from wire.stubs.kubernetes import delete_owned_objects as delete_owned_objects
from wire.stubs.kubernetes import delete_pod as delete_pod
from wire.stubs.kubernetes import delete_ray_resource as delete_ray_resource
from wire.stubs.kubernetes import delete_raycluster as delete_raycluster
from wire.stubs.kubernetes import delete_service as delete_service
from wire.stubs.kubernetes import get_head_pod as get_head_pod
from wire.stubs.kubernetes import get_job as get_job
from wire.stubs.kubernetes import get_raycluster as get_raycluster
from wire.stubs.kubernetes import get_service as get_service
from wire.stubs.kubernetes import list_cluster_pods as list_cluster_pods
from wire.stubs.kubernetes import list_owned_objects as list_owned_objects
from wire.stubs.kubernetes import list_rayclusters as list_rayclusters
from wire.stubs.kubernetes import patch_pod_labels as patch_pod_labels
from wire.stubs.kubernetes import read_operator_config as read_operator_config
from wire.stubs.kubernetes import record_event as record_event
from wire.stubs.kubernetes import suspend_worker_groups as suspend_worker_groups
from wire.stubs.kubernetes import update_raycluster_spec as update_raycluster_spec
from wire.stubs.kubernetes import update_service_spec as update_service_spec
from wire.stubs.temporal import closed_runs as closed_runs
from wire.stubs.temporal import delete_finished_rayjob as delete_finished_rayjob
from wire.stubs.temporal import enqueue_for_admission as enqueue_for_admission
from wire.stubs.temporal import latest_earlier_run as latest_earlier_run
from wire.stubs.temporal import list_cronjob_runs as list_cronjob_runs
from wire.stubs.temporal import observe_jobs as observe_jobs
from wire.stubs.temporal import observe_namespace as observe_namespace
from wire.stubs.temporal import read_run_start as read_run_start
from wire.stubs.temporal import request_rayjob_deletion as request_rayjob_deletion
from wire.stubs.temporal import wait_runs_closed as wait_runs_closed
from wire.stubs.temporal import watch_job as watch_job
from wire.stubs.temporal import watch_object as watch_object
from wire.stubs.waits import wait_cluster_pods as wait_cluster_pods
from wire.stubs.waits import wait_gateway as wait_gateway
from wire.stubs.waits import wait_head_pod as wait_head_pod
from wire.stubs.waits import wait_job as wait_job
from wire.stubs.waits import wait_raycluster as wait_raycluster
from wire.stubs.waits import wait_ready_endpoints as wait_ready_endpoints
from wire.stubs.waits import wait_serve as wait_serve
from wire.stubs.waits import wait_submitter_job as wait_submitter_job
