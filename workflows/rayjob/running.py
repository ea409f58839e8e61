"""Running: submit (HTTPMode), then watch the Ray job and the submitter until the RayJob is Complete/Failed.

KubeRay: the `JobDeploymentStatusRunning` branch of `RayJobReconciler.Reconcile`. Where KubeRay polls the
dashboard and the submitter every few seconds, the workflow keeps two wait activities in flight (the Ray
job's status; the K8sJobMode submitter Job or the SidecarMode head Pod) and one timer for the earliest
deadline, and decides only when one of them reports a change. The decisions themselves are
`next_running_status` and `status_after_http_submission`.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.naming import submitter_job_name
    from models.rayjob import JobDeploymentStatus, JobSubmissionMode
    from wire import stubs
    from wire.dashboard import JobInfoAnswer, RayJobKey, SubmitJob, WaitRayJob
    from wire.kubernetes import ObjectKey, Observation, WaitObject
    from wire.kubernetes_observer import ObservedKind, object_key
    from wire.observer import JobWatch, ObservedJob, takes_observed_view
    from wire.watch_book import is_newer_view
    from workflows.decisions.rayjob.dashboard import rayjob_head_service_manifest
    from workflows.decisions.rayjob.deadlines import (
        OBSERVER_CHECK_INTERVAL,
        earliest_deadline,
        earliest_wake,
        rayjob_deadlines,
    )
    from workflows.decisions.rayjob.events import (
        EventReason,
        rayjob_event,
    )
    from workflows.decisions.rayjob.http_submission import http_submit_request
    from workflows.decisions.rayjob.observations import (
        job_info_result,
        k8s_job_submitter_state,
        sidecar_submitter_state,
    )
    from workflows.decisions.rayjob.running import (
        has_submitter,
        next_running_status,
        status_after_http_submission,
    )
    from workflows.decisions.rayjob.submitter import SubmitCommandError
    from workflows.decisions.rayjob.transitions import is_judged_on_job_state, state_check_transition

from workflows.kit.calls import IO, call
from workflows.kit.waits import Finished
from workflows.rayjob.core import RayJobCore, RayJobPart, StepFailed
from workflows.rayjob.k8s_watches import KubernetesWatches
from workflows.rayjob.retries import job_for_attempt

JOB_WATCH = "job"
SUBMITTER_WATCH = "submitter"
# The first wait of an attempt assumes the Ray job does not exist yet, so it returns only once it does.
NOT_SUBMITTED = JobInfoAnswer("not_found")


class RunningSteps(RayJobPart):
    def __init__(self, core: RayJobCore) -> None:
        super().__init__(core)
        self.k8s = KubernetesWatches(core)

    async def running_step(self) -> None:
        check = state_check_transition(
            self.core.job, workflow.now(), self.core.config, self.core.submitter_finished_at()
        )
        if check is not None and self._wants_fresh_look():
            # The deadline is judged on the Ray job's state: judge it on the newest one, not on a view that a
            # busy worker had not delivered yet (a job that succeeded in time must not fail).
            await self._look_at_job()
            if self.core.status.job_deployment_status != JobDeploymentStatus.RUNNING:
                return
            check = state_check_transition(
                self.core.job, workflow.now(), self.core.config, self.core.submitter_finished_at()
            )
        if check is not None:
            self.core.transition(check)
            return
        attempt = self.core.state.attempt
        if self.core.uses_own_cluster() and not attempt.head_service_created:
            await self._create_head_service()
        if self.core.job.spec.submission_mode == JobSubmissionMode.HTTP_MODE and not attempt.submitted:
            await self._submit()
            return
        if self.core.state.observes:
            await self._watch_with_observer()
            if self.core.status.job_deployment_status != JobDeploymentStatus.RUNNING:
                return
        await self._register_submitter_watch()
        self._start_watches()
        deadline = earliest_deadline(
            rayjob_deadlines(self.core.job, self.core.config, self.core.submitter_finished_at())
        )
        # The Kubernetes observer's registrations share the job observer's check (one timer for both).
        wake = earliest_wake(deadline, attempt.observer_check_at if self._observed() else None)
        self.core.watches.arm_timer(wake.at if wake else None, wake.name if wake else "")
        finished = (
            await self.core.watches.race(self.core.changed_since(self.core.state.spec_version))
        ).finished
        await self._observe(finished)

    async def _create_head_service(self) -> None:
        manifest = rayjob_head_service_manifest(
            self.core.job,
            self.core.status.ray_cluster_name,
            self.core.cluster_spec(),
            workflow_id=self.core.state.workflow_id,
        )
        service_name = manifest["metadata"]["name"]
        with self.core.creating(
            EventReason.CREATED_SERVICE, EventReason.FAILED_TO_CREATE_SERVICE, service_name
        ) as created_event:
            request = self.core.owned_create(manifest, self.core.act_event(created_event))
            await call(stubs.create_service, request, IO.STEP)
        self.core.state.attempt.head_service_created = True

    async def _submit(self) -> None:
        """HTTPMode: POST the job with this attempt's deterministic submission id ("already exists" counts
        as submitted). A failed submission starts the failing-checks clock and is tried again later."""
        attempt = self.core.state.attempt
        try:
            request = SubmitJob(self.core.dashboard(), http_submit_request(job_for_attempt(self.core.state)))
            await call(stubs.submit_job, request, IO.STEP)
            submitted = True
        except (ActivityError, SubmitCommandError) as error:
            workflow.logger.warning("submitting Ray job %s failed: %s", self.core.status.job_id, error)
            submitted = False
        self.core.set_status(
            status_after_http_submission(self.core.status, workflow.now(), submitted=submitted)
        )
        attempt.submitted = submitted
        if not submitted:
            raise StepFailed(f"the Ray job {self.core.status.job_id} could not be submitted")
        # The watch in flight (if any) still assumes the job is missing: it reports the submitted job.
        if attempt.job_answer is None or attempt.job_answer.outcome == "not_found":
            attempt.job_answer = NOT_SUBMITTED

    # ---- watches ------------------------------------------------------------------------------------------

    def _start_watches(self) -> None:
        attempt = self.core.state.attempt
        answer = attempt.job_answer
        if not (answer is not None and answer.terminal) and self.core.status.job_id:
            if self._observed():
                last = answer or NOT_SUBMITTED
                self.core.watches.start(JOB_WATCH, lambda: self._next_observed(last))
            else:
                job_request = WaitRayJob(
                    self.core.dashboard(), self.core.status.job_id, last=answer or NOT_SUBMITTED
                )
                self.core.watches.start(
                    JOB_WATCH,
                    lambda: call(stubs.wait_job, job_request, IO.WAIT, summary="Ray job status"),
                )
        submitter = attempt.submitter
        if not has_submitter(self.core.job) or (
            submitter is not None and (submitter.finished_at is not None or submitter.failed)
        ):
            return
        if self.core.job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE:
            job_name = submitter_job_name(self.core.name)
            if self._k8s_registered("Job", job_name):
                job_view = attempt.submitter_view
                self.core.watches.start(
                    SUBMITTER_WATCH, lambda: self.k8s.next_view("Job", job_name, job_view)
                )
                return
            request = WaitObject(self.core.namespace, job_name, last_view=attempt.submitter_view)
            self.core.watches.start(
                SUBMITTER_WATCH,
                lambda: call(stubs.wait_submitter_job, request, IO.WAIT, summary="submitter Job"),
            )
        elif self._k8s_registered("HeadPod", self.core.status.ray_cluster_name):
            cluster_name, pod_view = self.core.status.ray_cluster_name, attempt.head_pod_view
            self.core.watches.start(
                SUBMITTER_WATCH, lambda: self.k8s.next_view("HeadPod", cluster_name, pod_view)
            )
        else:
            pod_request = WaitObject(
                self.core.namespace, self.core.status.ray_cluster_name, attempt.head_pod_view
            )
            self.core.watches.start(
                SUBMITTER_WATCH,
                lambda: call(stubs.wait_head_pod, pod_request, IO.WAIT, summary="head Pod (submitter)"),
            )

    async def _register_submitter_watch(self) -> None:
        """With the Kubernetes observer: registers this attempt's submitter (the K8sJobMode Job, the
        SidecarMode head Pod) while it has not finished."""
        attempt = self.core.state.attempt
        submitter = attempt.submitter
        if not has_submitter(self.core.job) or (
            submitter is not None and (submitter.finished_at is not None or submitter.failed)
        ):
            return
        check_at = attempt.observer_check_at if self._observed() else None
        if self.core.job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE:
            job_name = submitter_job_name(self.core.name)
            await self.k8s.register("Job", job_name, "finished", attempt.submitter_view, check_at)
        else:
            cluster_name = self.core.status.ray_cluster_name
            await self.k8s.register("HeadPod", cluster_name, "change", attempt.head_pod_view, check_at)

    def _k8s_registered(self, kind: ObservedKind, name: str) -> bool:
        return self.k8s.usable() and object_key(kind, name) in self.core.state.attempt.k8s_registered

    async def _watch_with_observer(self) -> None:
        """Registers this attempt's Ray job with its cluster's observer (signal-with-start: the observer
        starts on first need); the observer then signals every change of the job's view. Once an hour
        (`OBSERVER_CHECK_INTERVAL`) while nothing arrives otherwise, it registers again and looks at the job
        itself: a lost observer (terminated by hand, its book gone) is restarted and no end is missed."""
        attempt = self.core.state.attempt
        job_id = self.core.status.job_id
        answer = attempt.job_answer
        if not job_id or (answer is not None and answer.terminal) or attempt.observer_missing:
            return
        now = workflow.now()
        registered = attempt.observer_watch == job_id
        if registered and attempt.observer_check_at is not None and now < attempt.observer_check_at:
            return
        request = JobWatch(self.core.dashboard(), job_id, self.core.state.workflow_id)
        if not await call(stubs.watch_job, request, IO.STEP):
            attempt.observer_missing = True
            return
        attempt.observer_watch = job_id
        attempt.observer_check_at = now + OBSERVER_CHECK_INTERVAL
        if registered:
            await self._look_at_job()

    def _observed(self) -> bool:
        """Whether this attempt's job comes from the observer (else a polling wait activity watches it)."""
        return self.core.state.observes and not self.core.state.attempt.observer_missing

    async def _next_observed(self, last: JobInfoAnswer) -> ObservedJob:
        """The observer's first view of the job that differs from `last` (a keyed wait: no activity, no
        slot, no history event until the signal that brings it). The view must be news to the answer held
        now, which a direct look may have made fresher than every view held: see `takes_observed_view`."""
        job_id = self.core.status.job_id

        def newer() -> bool:
            view = self.core.state.observed
            return view is not None and view.submission_id == job_id and self._takes(view, last)

        await workflow.wait_condition(newer)
        view = self.core.state.observed
        assert view is not None
        return view

    def _takes(self, view: ObservedJob, last: JobInfoAnswer) -> bool:
        attempt = self.core.state.attempt
        version: tuple[int, int, int] = tuple(view.version)  # type: ignore[assignment]
        return takes_observed_view(
            attempt.job_answer or last, view.answer, newer=is_newer_view(attempt.answer_covers, version)
        )

    def _looked(self, answer: JobInfoAnswer) -> None:
        """A direct look's answer: it accounts for every view held now (they were listed before it)."""
        attempt = self.core.state.attempt
        attempt.job_answer = answer
        view = self.core.state.observed
        if view is not None and view.submission_id == self.core.status.job_id:
            attempt.answer_covers = tuple(view.version)  # type: ignore[assignment]

    def _take_job_report(self, report: JobInfoAnswer | ObservedJob) -> bool:
        """The job watch's report (a polled answer, or an observed view): whether it is the job's answer
        now. An observed view that resolved the wait is judged again against the answer held now: a direct
        look may have answered after the view arrived."""
        attempt = self.core.state.attempt
        if not isinstance(report, ObservedJob):
            attempt.job_answer = report
            return True
        if not self._takes(report, attempt.job_answer or NOT_SUBMITTED):
            return False
        attempt.job_answer = report.answer
        attempt.answer_covers = tuple(report.version)  # type: ignore[assignment]
        return True

    def _wants_fresh_look(self) -> bool:
        return is_judged_on_job_state(
            self.core.job, workflow.now(), self.core.config, self.core.submitter_finished_at()
        )

    async def _look_at_job(self) -> None:
        job_key = RayJobKey(self.core.dashboard(), self.core.status.job_id)
        self._looked(await call(stubs.get_job_info, job_key, IO.STEP))
        await self._decide()

    async def _observe(self, finished: list[Finished]) -> None:
        job_reported = submitter_reported = False
        for watch in finished:
            if watch.key == JOB_WATCH:
                job_reported = self._take_job_report(watch.value())
            elif watch.key == SUBMITTER_WATCH:
                self._observe_submitter(watch.value())
                submitter_reported = True
        if not (job_reported or submitter_reported):
            return
        if submitter_reported and not job_reported:
            # The submitter finished or failed: judge it against the Ray job as it is now.
            job_key = RayJobKey(self.core.dashboard(), self.core.status.job_id)
            self._looked(await call(stubs.get_job_info, job_key, IO.STEP))
        await self._decide()

    def _observe_submitter(self, observation: Observation) -> None:
        attempt = self.core.state.attempt
        pod_or_job: dict[str, Any] | None = observation.object
        if self.core.job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE:
            attempt.submitter_view = observation.view
            attempt.submitter = k8s_job_submitter_state((pod_or_job or {}).get("status"))
            return
        attempt.head_pod_view = observation.view
        config = self.core.job.spec.submitter_config
        attempt.submitter = sidecar_submitter_state(
            pod_or_job,
            submitter_restart_enabled=self.core.config.feature_gates.sidecar_submitter_restart,
            submitter_backoff_limit=config.backoff_limit if config is not None else None,
        )

    async def _decide(self) -> None:
        attempt = self.core.state.attempt
        answer = attempt.job_answer or NOT_SUBMITTED
        decision = next_running_status(
            self.core.job,
            workflow.now(),
            cluster_status=self.core.status.ray_cluster_status,
            submitter=attempt.submitter if has_submitter(self.core.job) else None,
            job_info=job_info_result(answer),
        )
        self.core.set_status(decision.status)
        if decision.submit_job:
            # HTTPMode and the job is gone (e.g. its cluster was re-created): submit it again.
            attempt.submitted = False
        if answer.outcome == "unavailable":
            await self._recreate_missing_cluster()

    async def _recreate_missing_cluster(self) -> None:
        """The dashboard does not answer: if the RayCluster is gone, create it again as KubeRay's
        getOrCreate does in Running (in clusterSelector mode, say that it is missing)."""
        cluster_name = self.core.status.ray_cluster_name
        found = await call(stubs.get_raycluster, ObjectKey(self.core.namespace, cluster_name), IO.STEP)
        if found is not None:
            self.core.set_cluster_status(found)
            return
        if not self.core.uses_own_cluster():
            self.core.record(
                rayjob_event(EventReason.RAYCLUSTER_NOT_FOUND, self.core.namespace, cluster_name)
            )
            return
        created_event = rayjob_event(EventReason.CREATED_RAYCLUSTER, self.core.namespace, cluster_name)
        request = self.core.cluster_create_request(cluster_name, self.core.act_event(created_event))
        await call(stubs.create_raycluster, request, IO.STEP)
        self.core.acted(created_event)
