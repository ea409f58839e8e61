"""The stubs of the activities that talk to Temporal itself: a RayCronJob's runs, admission of runs, a
RayJob's earlier runs, and the observers (registering a watch, the long-lived observing activity).
"""

from __future__ import annotations

from temporalio import activity

from wire import names
from wire.admission import AdmissionAnswer, AdmissionRequest, AdmissionTicket, OpenRuns
from wire.cronjob import CronJobKey, CronJobRuns, RayJobRunRef
from wire.kubernetes import EarlierRun, EarlierRuns, RunStart
from wire.kubernetes_observer import ObjectWatch, ObserveKubernetes
from wire.observer import JobWatch, ObserveJobs
from wire.stubs.common import STUB_MESSAGE as _STUB


@activity.defn(name=names.LATEST_EARLIER_RUN)
async def latest_earlier_run(request: EarlierRuns) -> EarlierRun | None:
    """`activities.temporal_runs.TemporalRunActivities.latest_earlier_run`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.READ_RUN_START)
async def read_run_start(request: EarlierRuns) -> RunStart:
    """`activities.temporal_runs.TemporalRunActivities.read_run_start`"""
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


@activity.defn(name=names.WATCH_RAY_JOB)
async def watch_job(request: JobWatch) -> bool:
    """`activities.observer.ObserverActivities.watch_job`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.OBSERVE_RAY_JOBS)
async def observe_jobs(request: ObserveJobs) -> None:
    """`activities.observer.ObserverActivities.observe_jobs`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.WATCH_K8S_OBJECT)
async def watch_object(request: ObjectWatch) -> bool:
    """`activities.kubernetes.observer.KubernetesObserverActivities.watch_object`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.OBSERVE_K8S_NAMESPACE)
async def observe_namespace(request: ObserveKubernetes) -> None:
    """`activities.kubernetes.observer.KubernetesObserverActivities.observe_namespace`"""
    raise NotImplementedError(_STUB)
