"""Fake activities for RayJobWorkflow tests, registered under the real activity names: an in-memory cluster
(RayClusters, Services, submitter Jobs, head Pods, Events), a Ray dashboard whose jobs follow a script, and
the submitter (a K8sJobMode Job or SidecarMode container) that submits the job and finishes with it.

Waits return on change like the real ones. When nothing changes for `patience` real seconds they fail with a
retryable error, so the workflow's retry policy schedules them again: while a wait is between attempts the
time-skipping test server can jump to the workflow's next timer (it never skips while an activity runs).
Tests that drive the world by hand with time skipping off use a long patience instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.kubernetes import prepare_create_body
from activities.kubernetes_resources import JOB, RAYCLUSTER, SERVICE, Resource
from models.naming import LABEL_ORIGINATED_FROM_CR_NAME, SUBMITTER_CONTAINER_NAME
from models.operator import OperatorConfig
from wire import names
from wire.dashboard import (
    JobInfoAnswer,
    RayJobKey,
    StopJobResult,
    SubmitJob,
    SubmitJobResult,
    WaitRayJob,
)
from wire.kubernetes import (
    CreateObject,
    DeleteObject,
    EarlierRun,
    EarlierRuns,
    ObjectKey,
    Observation,
    OwnedObjects,
    RayResourceKey,
    RecordEvent,
    WaitObject,
    WaitRayCluster,
)
from wire.kubernetes_observer import ObjectWatch
from wire.names import READ_OPERATOR_CONFIG
from wire.views import job_view, pod_view, raycluster_view

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
SUCCEEDS: tuple[str, ...] = ("PENDING", "RUNNING", "SUCCEEDED")
FAILS: tuple[str, ...] = ("PENDING", "RUNNING", "FAILED")
RUNS_FOREVER: tuple[str, ...] = ("PENDING", "RUNNING")
# How the K8sJobMode submitter behaves: finishes when its Ray job ends (as `ray job logs --follow` does),
# never finishes, finishes at once (without waiting for the job), or fails without submitting.
SubmitterOutcome = Literal["with_job", "never", "immediately", "fails"]


def _now() -> datetime:
    """The workflow-side time of the running activity (the test server's clock under time skipping)."""
    try:
        return activity.info().current_attempt_scheduled_time
    except RuntimeError:
        return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class FakeRayJob:
    """A Ray job on the fake dashboard: it shows `script[index]` and moves one step on once a wait has seen
    the current step, except that it stays RUNNING for `duration`; it stays on its last step."""

    submission_id: str
    script: tuple[str, ...]
    duration: timedelta = timedelta(0)
    index: int = 0
    observed: int = -1
    running_since: datetime | None = None
    start_ms: int = 0
    end_ms: int = 0
    stopped: bool = False
    # Ray's error_type once the job FAILED (JobDetails), e.g. RUNTIME_ENV_SETUP_FAILURE.
    error_type: str = ""

    def progress(self, now: datetime) -> bool:
        """Moves on if the current step was seen and is not held; True when it moved."""
        if self.stopped or self.index >= len(self.script) - 1 or self.observed < self.index:
            return False
        if self.running_since is not None and now < self.running_since + self.duration:
            return False
        self.index += 1
        now_ms = int(now.timestamp() * 1000)
        if self.status == "RUNNING":
            self.running_since = now
            self.start_ms = now_ms
        if self.terminal:
            self.start_ms = self.start_ms or now_ms
            self.end_ms = now_ms
        return True

    @property
    def status(self) -> str:
        return "STOPPED" if self.stopped else self.script[self.index]

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def answer(self) -> JobInfoAnswer:
        return JobInfoAnswer(
            "found",
            status=self.status,
            message=f"Job is {self.status.lower()}",
            start_time_ms=self.start_ms,
            end_time_ms=self.end_ms,
            error_type=self.error_type if self.status == "FAILED" else "",
        )


@dataclass
class FakeWorld:
    config: OperatorConfig = field(default_factory=OperatorConfig)
    patience: float = 0.01
    clusters_become_ready: bool = True
    # One script per submitted Ray job, in submission order; the last one repeats.
    job_scripts: list[tuple[str, ...]] = field(default_factory=lambda: [SUCCEEDS])
    # Ray's error_type of a failed job, per submission like job_scripts (the last one repeats; none: "").
    job_error_types: list[str] = field(default_factory=list)
    # How long each Ray job stays RUNNING (workflow time).
    job_duration: timedelta = timedelta(0)
    submitter_outcome: SubmitterOutcome = "with_job"
    # The dashboard answers every job status request with an error.
    dashboard_unavailable: bool = False
    # RayClusters whose deletion a finalizer holds until `release_finalizer`.
    finalizers: set[str] = field(default_factory=set)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    head_pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    ray_jobs: dict[str, FakeRayJob] = field(default_factory=dict)
    events: list[RecordEvent] = field(default_factory=list)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    deleted_resources: list[RayResourceKey] = field(default_factory=list)
    # What Temporal's visibility shows as the newest earlier run of the workflow id.
    earlier_run: EarlierRun | None = None
    submissions: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    # ---- driving the world ------------------------------------------------------------------------------

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def called(self, name: str) -> list[Any]:
        return [arg for called, arg in self.calls if called == name]

    def event_reasons(self) -> list[str]:
        return [event.reason for event in self.events]

    def make_ready(self, cluster_name: str) -> None:
        cluster = self.clusters[cluster_name]
        cluster["status"] = {
            "state": "ready",
            "head": {"serviceName": f"{cluster_name}-head-svc", "podIP": "10.0.0.1"},
            "endpoints": {"dashboard": "8265", "client": "10001"},
        }
        self._start_sidecar(cluster)
        self.notify()

    def release_finalizer(self, cluster_name: str) -> None:
        self.finalizers.discard(cluster_name)
        if self.clusters.get(cluster_name, {}).get("metadata", {}).get("deletionTimestamp"):
            del self.clusters[cluster_name]
        self.notify()

    def add_ray_job(self, submission_id: str, script: Sequence[str]) -> None:
        self.ray_jobs[submission_id] = FakeRayJob(submission_id, tuple(script), self.job_duration)
        self.notify()

    def _next_script(self) -> tuple[str, ...]:
        self.submissions += 1
        return self.job_scripts[min(self.submissions, len(self.job_scripts)) - 1]

    def _submit(self, submission_id: str) -> FakeRayJob:
        if submission_id not in self.ray_jobs:
            script = self._next_script()
            errors = self.job_error_types
            error_type = errors[min(self.submissions, len(errors)) - 1] if errors else ""
            self.ray_jobs[submission_id] = FakeRayJob(
                submission_id, script, self.job_duration, error_type=error_type
            )
            self.notify()
        return self.ray_jobs[submission_id]

    def _progress(self, job: FakeRayJob) -> None:
        """The job moves on if it may; the submitter finishes with it."""
        if job.progress(_now()):
            if job.terminal:
                self._finish_submitters(job.submission_id)
            self.notify()

    def _finish_submitters(self, submission_id: str) -> None:
        stamp = _stamp(_now())
        for submitter in self.jobs.values():
            if submitter["_submission_id"] == submission_id and self.submitter_outcome == "with_job":
                self.finish_submitter(submitter, "Complete")
        for pod in self.head_pods.values():
            if pod["_submission_id"] == submission_id:
                for container in pod["status"]["containerStatuses"]:
                    if container["name"] == SUBMITTER_CONTAINER_NAME:
                        container["state"] = {"terminated": {"exitCode": 0, "finishedAt": stamp}}

    def finish_submitter(self, submitter: dict[str, Any], condition: str) -> None:
        """The submitter Job ends with a `Complete` or `Failed` condition."""
        stamp = _stamp(_now())
        status: dict[str, Any] = {"succeeded": 1} if condition == "Complete" else {"failed": 3}
        status["conditions"] = [
            {
                "type": condition,
                "status": "True",
                "lastTransitionTime": stamp,
                "reason": "" if condition == "Complete" else "BackoffLimitExceeded",
                "message": "" if condition == "Complete" else "Job has reached the specified backoff limit",
            }
        ]
        submitter["status"] = status
        self.notify()

    def dashboard_answer(self, submission_id: str) -> JobInfoAnswer:
        if self.dashboard_unavailable:
            return JobInfoAnswer("unavailable", error="GetJobInfo fail: connection refused")
        job = self.ray_jobs.get(submission_id)
        return job.answer() if job is not None else JobInfoAnswer("not_found")

    def _start_sidecar(self, cluster: dict[str, Any]) -> None:
        containers = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
        sidecar = next((c for c in containers if c["name"] == SUBMITTER_CONTAINER_NAME), None)
        if sidecar is None:
            return
        submission_id = _env(sidecar, "RAY_JOB_SUBMISSION_ID")
        name = cluster["metadata"]["name"]
        self.head_pods[name] = {
            "_submission_id": submission_id,
            "metadata": {"name": f"{name}-head", "uid": f"uid-{name}-head"},
            "spec": {"containers": [{"name": c["name"]} for c in containers]},
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {"name": c["name"], "state": {"running": {}}, "restartCount": 0} for c in containers
                ],
            },
        }
        self._submit(submission_id)

    async def _until(self, observe: Callable[[], Any]) -> Any:
        """`observe()` until it returns something; after `patience` seconds ask to be retried."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.patience
        while True:
            result = observe()
            if result is not None:
                return result
            remaining = give_up - loop.time()
            if remaining <= 0:
                raise ApplicationError("nothing changed yet", type="FakeNoChange")
            activity.heartbeat()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=min(remaining, 0.1))

    def activities(self) -> list[Callable[..., Any]]:
        return FakeActivities(self).all()


def _env(container: dict[str, Any], name: str) -> str:
    return next((var.get("value", "") for var in container.get("env") or [] if var["name"] == name), "")


def _key(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


class FakeActivities:
    def __init__(self, world: FakeWorld) -> None:
        self.world = world

    def all(self) -> list[Callable[..., Any]]:
        return [
            getattr(self, attribute)
            for attribute in dir(self)
            if hasattr(getattr(self, attribute), "__temporal_activity_definition")
        ]

    def _log(self, name: str, arg: Any) -> None:
        self.world.calls.append((name, arg))

    def _create(self, store: dict[str, dict[str, Any]], resource: Resource, request: CreateObject) -> Any:
        body = prepare_create_body(resource, request)
        name = _key(body)
        if name not in store:
            body["metadata"]["uid"] = f"uid-{name}"
            store[name] = body
            self.world.notify()
        return copy.deepcopy(store[name])

    @activity.defn(name=READ_OPERATOR_CONFIG)
    async def read_operator_config(self) -> OperatorConfig:
        return self.world.config

    @activity.defn(name=names.LATEST_EARLIER_RUN)
    async def latest_earlier_run(self, request: EarlierRuns) -> EarlierRun | None:
        self._log(names.LATEST_EARLIER_RUN, request)
        return self.world.earlier_run

    # ---- RayClusters --------------------------------------------------------------------------------------

    @activity.defn(name=names.CREATE_RAYCLUSTER)
    async def create_raycluster(self, request: CreateObject) -> dict[str, Any]:
        self._log(names.CREATE_RAYCLUSTER, request)
        created: dict[str, Any] = self._create(self.world.clusters, RAYCLUSTER, request)
        if self.world.clusters_become_ready and not created.get("status"):
            self.world.make_ready(_key(created))
        return created

    @activity.defn(name=names.GET_RAYCLUSTER)
    async def get_raycluster(self, key: ObjectKey) -> dict[str, Any] | None:
        self._log(names.GET_RAYCLUSTER, key)
        return copy.deepcopy(self.world.clusters.get(key.name))

    @activity.defn(name=names.DELETE_RAYCLUSTER)
    async def delete_raycluster(self, request: DeleteObject) -> bool:
        self._log(names.DELETE_RAYCLUSTER, request)
        cluster = self.world.clusters.get(request.name)
        if cluster is None:
            return False
        if request.name in self.world.finalizers:
            cluster["metadata"]["deletionTimestamp"] = _stamp(_now())
        else:
            del self.world.clusters[request.name]
            self.world.head_pods.pop(request.name, None)
        self.world.notify()
        return True

    @activity.defn(name=names.SUSPEND_WORKER_GROUPS)
    async def suspend_worker_groups(self, key: ObjectKey) -> dict[str, Any] | None:
        self._log(names.SUSPEND_WORKER_GROUPS, key)
        cluster = self.world.clusters.get(key.name)
        if cluster is None:
            return None
        for group in cluster["spec"].get("workerGroupSpecs") or []:
            group["suspend"] = True
        self.world.notify()
        return copy.deepcopy(cluster)

    @activity.defn(name=names.WAIT_RAYCLUSTER)
    async def wait_raycluster(self, request: WaitRayCluster) -> Observation:
        def observe() -> Observation | None:
            cluster = self.world.clusters.get(request.name)
            view = raycluster_view(cluster)
            reached = {"change": view != request.last_view, "ready": view.get("state") == "ready"}
            if cluster is None or reached.get(request.until, False):
                return Observation(copy.deepcopy(cluster), view)
            return None

        result: Observation = await self.world._until(observe)
        return result

    # ---- Services, submitter Jobs, head Pods --------------------------------------------------------------

    @activity.defn(name=names.CREATE_SERVICE)
    async def create_service(self, request: CreateObject) -> dict[str, Any]:
        self._log(names.CREATE_SERVICE, request)
        return dict(self._create(self.world.services, SERVICE, request))

    @activity.defn(name=names.GET_SERVICE)
    async def get_service(self, key: ObjectKey) -> dict[str, Any] | None:
        self._log(names.GET_SERVICE, key)
        return copy.deepcopy(self.world.services.get(key.name))

    @activity.defn(name=names.CREATE_JOB)
    async def create_job(self, request: CreateObject) -> dict[str, Any]:
        self._log(names.CREATE_JOB, request)
        created: dict[str, Any] = self._create(self.world.jobs, JOB, request)
        stored = self.world.jobs[_key(created)]
        container = stored["spec"]["template"]["spec"]["containers"][0]
        stored["_submission_id"] = _env(container, "RAY_JOB_SUBMISSION_ID")
        outcome = self.world.submitter_outcome
        if outcome == "fails":
            self.world.finish_submitter(stored, "Failed")
            return created
        self.world._submit(stored["_submission_id"])
        if outcome == "immediately":
            self.world.finish_submitter(stored, "Complete")
        return created

    @activity.defn(name=names.GET_JOB)
    async def get_job(self, key: ObjectKey) -> dict[str, Any] | None:
        self._log(names.GET_JOB, key)
        return copy.deepcopy(self.world.jobs.get(key.name))

    @activity.defn(name=names.DELETE_JOB)
    async def delete_job(self, request: DeleteObject) -> bool:
        self._log(names.DELETE_JOB, request)
        deleted = self.world.jobs.pop(request.name, None) is not None
        self.world.notify()
        return deleted

    @activity.defn(name=names.WAIT_SUBMITTER_JOB)
    async def wait_submitter_job(self, request: WaitObject) -> Observation:
        def observe() -> Observation | None:
            job = self.world.jobs.get(request.name)
            view = job_view(job)
            return Observation(copy.deepcopy(job), view) if view != request.last_view else None

        result: Observation = await self.world._until(observe)
        return result

    @activity.defn(name=names.WAIT_HEAD_POD)
    async def wait_head_pod(self, request: WaitObject) -> Observation:
        def observe() -> Observation | None:
            pod = self.world.head_pods.get(request.name)
            view = pod_view(pod)
            return Observation(copy.deepcopy(pod), view) if view != request.last_view else None

        result: Observation = await self.world._until(observe)
        return result

    @activity.defn(name=names.WATCH_K8S_OBJECT)
    async def watch_object(self, request: ObjectWatch) -> bool:
        """The fake world alone has no Kubernetes observer (as a worker without a Temporal client): the
        RayJob waits with the wait activities above (raypilot.testing.kubernetes_observer_world has one)."""
        return False

    # ---- Events and ownership -----------------------------------------------------------------------------

    @activity.defn(name=names.RECORD_EVENT)
    async def record_event(self, request: RecordEvent) -> str:
        self.world.events.append(request)
        return f"{request.involved.name}.{request.event_id}"

    @activity.defn(name=names.DELETE_OWNED_OBJECTS)
    async def delete_owned_objects(self, request: OwnedObjects) -> list[dict[str, str]]:
        self._log(names.DELETE_OWNED_OBJECTS, request)
        stores = {"Service": self.world.services, "Job": self.world.jobs, "RayCluster": self.world.clusters}
        deleted = []
        for kind in request.kinds:
            store = stores.get(kind, {})
            for name, obj in list(store.items()):
                labels = obj["metadata"].get("labels") or {}
                if labels.get(LABEL_ORIGINATED_FROM_CR_NAME) == request.owner_name:
                    del store[name]
                    deleted.append({"kind": kind, "name": name})
        self.world.notify()
        return deleted

    @activity.defn(name=names.DELETE_RAY_RESOURCE)
    async def delete_ray_resource(self, key: RayResourceKey) -> bool:
        self.world.deleted_resources.append(key)
        return False

    # ---- the Ray dashboard --------------------------------------------------------------------------------

    @activity.defn(name=names.SUBMIT_JOB)
    async def submit_job(self, request: SubmitJob) -> SubmitJobResult:
        self._log(names.SUBMIT_JOB, request)
        submission_id = str(request.request["submission_id"])
        created = submission_id not in self.world.ray_jobs
        self.world._submit(submission_id)
        return SubmitJobResult(submission_id, created)

    @activity.defn(name=names.GET_JOB_INFO)
    async def get_job_info(self, key: RayJobKey) -> JobInfoAnswer:
        self._log(names.GET_JOB_INFO, key)
        return self.world.dashboard_answer(key.submission_id)

    @activity.defn(name=names.STOP_JOB)
    async def stop_job(self, key: RayJobKey) -> StopJobResult:
        self._log(names.STOP_JOB, key)
        job = self.world.ray_jobs.get(key.submission_id)
        if job is None:
            return StopJobResult(found=False, stopped=False)
        if job.terminal:
            return StopJobResult(found=True, stopped=False, status=job.status)
        job.stopped = True
        self.world.notify()
        return StopJobResult(found=True, stopped=True)

    @activity.defn(name=names.WAIT_RAY_JOB)
    async def wait_job(self, request: WaitRayJob) -> JobInfoAnswer:
        last = request.last.key() if request.last is not None else None

        def observe() -> JobInfoAnswer | None:
            job = self.world.ray_jobs.get(request.submission_id)
            if job is not None:
                self.world._progress(job)
            answer = self.world.dashboard_answer(request.submission_id)
            if answer.key() == last and not answer.terminal:
                return None
            if job is not None and answer.outcome == "found":
                job.observed = job.index
            return answer

        result: JobInfoAnswer = await self.world._until(observe)
        return result
