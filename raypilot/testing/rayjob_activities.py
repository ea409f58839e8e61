"""The fake activities of the RayJob fake world (`raypilot.testing.rayjob_world.FakeWorld`), registered
under the real activity names: RayClusters, Services, submitter Jobs, head Pods, Events and the Ray dashboard,
all kept in the world's memory. Waits return on change and otherwise ask to be retried after the world's
`patience` (see the world's module)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from temporalio import activity

from activities.kubernetes.clusters import prepare_create_body
from activities.kubernetes.resources import JOB, RAYCLUSTER, SERVICE, Resource
from models.naming import LABEL_ORIGINATED_FROM_CR_NAME
from models.operator import OperatorConfig
from raypilot.testing.rayjob_fake_jobs import activity_now, container_env, iso_stamp
from raypilot.testing.rayjob_world_state import FakeWorldState
from wire import names
from wire.dashboard import (
    DashboardTarget,
    JobInfoAnswer,
    RayJobKey,
    StopJobResult,
    SubmitJob,
    SubmitJobResult,
    SubmittedJob,
    WaitRayJob,
)
from wire.driver_log import STATUS_TAIL, DriverLogSaved, SaveDriverLog, log_tail
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
    RunStart,
    WaitObject,
    WaitRayCluster,
)
from wire.kubernetes_observer import ObjectWatch
from wire.names import READ_OPERATOR_CONFIG
from wire.views import job_view, pod_view, raycluster_view


def _key(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


class FakeActivities:
    def __init__(self, world: FakeWorldState) -> None:
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
        self._post_act_event(request.event)
        return copy.deepcopy(store[name])

    def _post_act_event(self, event: RecordEvent | None) -> None:
        """The Event a successful create or delete posts itself (as the real activities do)."""
        if event is not None:
            self.world.events.append(event)

    @activity.defn(name=READ_OPERATOR_CONFIG)
    async def read_operator_config(self) -> OperatorConfig:
        return self.world.config

    @activity.defn(name=names.LATEST_EARLIER_RUN)
    async def latest_earlier_run(self, request: EarlierRuns) -> EarlierRun | None:
        self._log(names.LATEST_EARLIER_RUN, request)
        return self.world.earlier_run

    @activity.defn(name=names.READ_RUN_START)
    async def read_run_start(self, request: EarlierRuns) -> RunStart:
        """Both reads, as the real activity runs them (the look at the earlier runs is logged as itself)."""
        return RunStart(await self.read_operator_config(), await self.latest_earlier_run(request))

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
            cluster["metadata"]["deletionTimestamp"] = iso_stamp(activity_now())
        else:
            del self.world.clusters[request.name]
            self.world.head_pods.pop(request.name, None)
        self.world.notify()
        self._post_act_event(request.event)
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
        stored["_submission_id"] = container_env(container, "RAY_JOB_SUBMISSION_ID")
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
        if deleted:
            self._post_act_event(request.event)
        return deleted

    @activity.defn(name=names.WAIT_SUBMITTER_JOB)
    async def wait_submitter_job(self, request: WaitObject) -> Observation:
        return await self._until_view_changes(request, lambda: self.world.jobs.get(request.name), job_view)

    @activity.defn(name=names.WAIT_HEAD_POD)
    async def wait_head_pod(self, request: WaitObject) -> Observation:
        return await self._until_view_changes(
            request, lambda: self.world.head_pods.get(request.name), pod_view
        )

    async def _until_view_changes(
        self,
        request: WaitObject,
        find: Callable[[], dict[str, Any] | None],
        view_of: Callable[[dict[str, Any] | None], dict[str, Any]],
    ) -> Observation:
        """The object `find` returns once its view differs from the one the workflow holds."""

        def observe() -> Observation | None:
            found = find()
            view = view_of(found)
            return Observation(copy.deepcopy(found), view) if view != request.last_view else None

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

    @activity.defn(name=names.LIST_SUBMITTED_JOBS)
    async def list_submitted_jobs(self, target: DashboardTarget) -> list[SubmittedJob]:
        self._log(names.LIST_SUBMITTED_JOBS, target)
        listed = []
        for submission_id, job in self.world.ray_jobs.items():
            entrypoint, metadata = self.world.job_entrypoints.get(submission_id, ("", None))
            listed.append(SubmittedJob(submission_id, entrypoint, metadata, job.status, job.start_ms))
        return listed

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

    @activity.defn(name=names.SAVE_DRIVER_LOG)
    async def save_driver_log(self, request: SaveDriverLog) -> DriverLogSaved:
        """The job's log from the world (no log store): its tail, and the Event posted as the real one."""
        self.world.saved_driver_logs.append(request)
        if request.submission_id not in self.world.ray_jobs:
            saved = DriverLogSaved(found=False, event_message=f"Ray job {request.submission_id}: no log")
        else:
            logs = self.world.driver_logs.get(request.submission_id, f"driver of {request.submission_id}\n")
            message = f"Driver log of Ray job {request.submission_id}:\n{log_tail(logs, STATUS_TAIL)}"
            saved = DriverLogSaved(
                found=True,
                total_bytes=len(logs.encode()),
                tail=log_tail(logs, STATUS_TAIL),
                event_message=message,
            )
        self._post_act_event(dataclasses.replace(request.event, message=saved.event_message))
        return saved

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
