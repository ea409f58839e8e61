"""What every part of the RayJob workflow shares: its state, status changes (with counters, retries and the
Web UI's phase), Events, ownership marks, the dashboard it talks to, and pausing after a failed act.

The parts (initializing, running, release, deletion: one per group of states) each hold the one
`RayJobCore` of the run; `workflows.rayjob.workflow.RayJobWorkflow` makes them and runs the current state's
step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.naming import KIND_RAYJOB
    from models.notify_default import NotifyDefault
    from models.operator import OperatorConfig
    from models.raycluster import RayClusterSpec, RayClusterStatus
    from models.rayjob import RayJob, RayJobStatus
    from models.source import object_api_version
    from wire import stubs
    from wire.dashboard import DashboardTarget
    from wire.kubernetes import CreateObject, InvolvedObject, OwnerReference, Ownership, RecordEvent
    from wire.notify import NotifiedObject
    from workflows.decisions.rayjob.backoff import failure_backoff
    from workflows.decisions.rayjob.cluster import rayjob_cluster_manifest
    from workflows.decisions.rayjob.dashboard import dashboard_target
    from workflows.decisions.rayjob.deadlines import earliest_deadline, rayjob_deadlines
    from workflows.decisions.rayjob.details import phase_details
    from workflows.decisions.rayjob.driver_log import driver_log_to_save
    from workflows.decisions.rayjob.events import EventReason, RayJobEvent, rayjob_event
    from workflows.decisions.rayjob.notify import rayjob_notification
    from workflows.decisions.rayjob.retry import settle_transition
    from workflows.decisions.rayjob.status import Transition, apply_transition
    from workflows.search_attributes import MEMO_JOB_STATUS, RAY_KIND, RAY_NAME, RAY_NAMESPACE, RAY_PHASE

from workflows.kit.calls import IO, call
from workflows.kit.metrics import RayJobMetrics
from workflows.kit.notify import Notifier
from workflows.kit.waits import Waits
from workflows.rayjob.retries import job_for_attempt, retry_verdict, settled_with_attempt
from workflows.rayjob.state import RayJobState


class StepFailed(Exception):
    """A step could not be done now for a reason other than an activity failure (e.g. the selected RayCluster
    does not exist); the workflow waits and tries again, as KubeRay requeues."""


class RayJobCore:
    """What every part of one RayJob workflow shares: its state, its in-flight waits and Events, and the
    helpers every phase uses (status changes, Events, ownership, the dashboard, pausing after a failure)."""

    def __init__(self, state: RayJobState) -> None:
        self.state = state
        self.watches = Waits()
        self.metrics = RayJobMetrics()
        self._event_tasks: list[asyncio.Task[None]] = []
        info = workflow.info()
        metadata = state.job.metadata
        target = NotifiedObject(
            KIND_RAYJOB, metadata.namespace, metadata.name, state.workflow_id, info.first_execution_run_id
        )
        # raypilot.io/notify: Complete, Failed and Retrying, sent in the background (nothing without it or
        # the cluster-wide default of the run's operator configuration).
        self.notifier = Notifier(target, state.notify, self._notify_default)

    def _notify_default(self) -> NotifyDefault | None:
        """RAYPILOT_NOTIFY as this run's operator configuration recorded it."""
        return self.state.config.notify if self.state.config is not None else None

    # ---- the RayJob -------------------------------------------------------------------------------------

    @property
    def job(self) -> RayJob:
        return self.state.job

    @property
    def status(self) -> RayJobStatus:
        return self.state.job.status

    @property
    def config(self) -> OperatorConfig:
        if self.state.config is None:
            raise RuntimeError("the operator configuration is read before any step runs")
        return self.state.config

    @property
    def namespace(self) -> str:
        return self.job.metadata.namespace

    @property
    def name(self) -> str:
        return self.job.metadata.name

    def uses_own_cluster(self) -> bool:
        """False in clusterSelector mode: that cluster is never created, changed or deleted."""
        return not self.job.spec.cluster_selector

    def changed_since(self, spec_version: int) -> Callable[[], bool]:
        """A condition for races: an `apply` arrived or a `delete` was asked for."""
        return lambda: self.state.spec_version != spec_version or self.state.delete_requested

    # ---- status -------------------------------------------------------------------------------------------

    def set_status(self, new: RayJobStatus) -> None:
        """The new status; a change of jobDeploymentStatus is settled as KubeRay settles a pass (counters,
        Retrying, endTime) and published as the RayPhase search attribute."""
        previous = self.status
        retry = retry_verdict(self.state, previous, new)
        settled = settle_transition(self.job.spec, previous, new, workflow.now(), retry)
        settled = settled_with_attempt(self.state, previous, settled, workflow.now())
        self.state.job = self.job.model_copy(update={"status": settled})
        self.metrics.status_changed(previous, settled)
        keeps_every_log = self.state.config is not None and self.state.config.keeps_driver_logs
        ended_job = driver_log_to_save(previous, settled, keeps_every_log)
        if ended_job is not None:
            self.state.driver_log_due = ended_job  # saved by the main loop before anything is deleted
        moment = rayjob_notification(previous, settled)
        if moment is not None:
            self.notifier.notify(self.job.metadata.annotations, [moment])
        if settled.job_deployment_status != previous.job_deployment_status:
            workflow.logger.info(
                "RayJob %s/%s: %s -> %s (%s)",
                self.namespace,
                self.name,
                previous.job_deployment_status.value or "New",
                settled.job_deployment_status.value or "New",
                settled.reason.value if settled.reason else "",
            )
        self.publish()

    def transition(self, transition: Transition) -> None:
        self.set_status(apply_transition(self.status, transition))

    def update_status(self, **fields: Any) -> None:
        self.set_status(self.status.model_copy(update=fields))

    def set_cluster_status(self, cluster: dict[str, Any] | None) -> None:
        """status.rayClusterStatus from a RayCluster's JSON (unchanged when there is none)."""
        if cluster is not None:
            self.update_status(
                ray_cluster_status=RayClusterStatus.model_validate(cluster.get("status") or {})
            )

    def publish(self) -> None:
        """RayPhase on a phase change only (each upsert is billable; the first one also sets RayKind,
        RayNamespace and RayName when the starter did not); for a raypilot.io object the jobStatus memo on
        its change (what `kubectl get` shows changes within a phase); the current details on every change."""
        phase = self.status.job_deployment_status.value
        if phase and phase != self.state.published_phase:
            updates = [RAY_PHASE.value_set(phase)]
            if self.state.published_phase is None:
                present = workflow.info().typed_search_attributes
                identity = ((RAY_KIND, KIND_RAYJOB), (RAY_NAMESPACE, self.namespace), (RAY_NAME, self.name))
                updates += [key.value_set(value) for key, value in identity if present.get(key) is None]
            workflow.upsert_search_attributes(updates)
            self.state.published_phase = phase
        job_status = self.status.job_status.value
        if self.state.publishes_job_status and job_status != self.state.published_job_status:
            workflow.upsert_memo({MEMO_JOB_STATUS: job_status})
            self.state.published_job_status = job_status
        workflow.set_current_details(phase_details(self.status))

    # ---- Kubernetes objects -------------------------------------------------------------------------------

    def ownership(self) -> Ownership:
        """Ownership labels and annotations, with this RayJob instance's uid (the run's first execution run
        id, stable across retries), so no later run adopts what this one created."""
        return Ownership(
            KIND_RAYJOB, self.name, self.state.workflow_id, rayjob_uid=workflow.info().first_execution_run_id
        )

    def owner_reference(self) -> OwnerReference | None:
        """An ownerReference to the RayJob custom resource, when the manifest came from one (has a uid)."""
        uid = self.job.metadata.uid
        if not uid:
            return None
        return OwnerReference(object_api_version(self.job.metadata.annotations), KIND_RAYJOB, self.name, uid)

    def cluster_create_request(self, cluster_name: str, event: RecordEvent | None) -> CreateObject:
        """The RayCluster this RayJob runs on, as the create activity takes it (first creation and the
        re-creation of a cluster deleted while Running are the same object), with the Event it posts once
        created (`act_event`)."""
        manifest = rayjob_cluster_manifest(
            job_for_attempt(self.state),
            cluster_name,
            workflow_id=self.state.workflow_id,
            gates=self.config.feature_gates,
        )
        return self.owned_create(manifest, event)

    def owned_create(self, manifest: dict[str, Any], event: RecordEvent | None) -> CreateObject:
        """`manifest` as the create activities take it: with this RayJob's ownership and ownerReference, and
        the Event to post once created (`act_event`)."""
        return CreateObject(
            body=manifest, ownership=self.ownership(), owner=self.owner_reference(), event=event
        )

    def cluster_spec(self) -> RayClusterSpec:
        spec = self.state.attempt.cluster_spec
        if spec is None:
            raise RuntimeError("the attempt has no RayCluster yet")
        return spec

    def dashboard(self) -> DashboardTarget:
        return dashboard_target(self.job, self.cluster_spec())

    # ---- Events -------------------------------------------------------------------------------------------

    def record(self, event: RayJobEvent) -> None:
        """A Kubernetes Event on the RayJob (best effort, as KubeRay's recorder), kept for the `events`
        query. Sent by a local activity in the background; `flush_events` waits for the ones in flight."""
        sequence = self.state.remember_event(event, workflow.now())
        request = self._event_request(event, sequence)
        self._event_tasks.append(asyncio.ensure_future(self._send_event(request)))

    def act_event(self, event: RayJobEvent) -> RecordEvent:
        """The Event of an act (CreatedRayCluster for a create), for the act's own activity to post once it
        succeeded: no local activity of its own, one billable action less.

        Its number is taken now, so an act that fails leaves a gap instead of lending its number (its
        Kubernetes name) to the failure's Event: an attempt that posted the success and then timed out would
        otherwise hide the failure's Event behind its own."""
        self.state.event_sequence += 1
        return self._event_request(event, self.state.event_sequence)

    def acted(self, event: RayJobEvent) -> None:
        """After a successful act whose activity posted its Event (`act_event`): the Event kept for the
        `events` query as any other."""
        self.state.keep_event(event, workflow.now())

    @contextmanager
    def failure_recorded(self, failed: EventReason, name: str, *errors: type[Exception]) -> Iterator[None]:
        """Around an act on the object `name`, as KubeRay's recorder: the `failed` Warning Event with the
        error when the act raises an ActivityError (or one of `errors`, building its request)."""
        recorded: tuple[type[Exception], ...] = (ActivityError, *errors)
        try:
            yield
        except recorded as error:
            self.record(rayjob_event(failed, self.namespace, name, error_text(error)))
            raise

    @contextmanager
    def creating(
        self, created: EventReason, failed: EventReason, name: str, *errors: type[Exception]
    ) -> Iterator[RayJobEvent]:
        """Around the create of `name`, whose activity posts the `created` Event it yields (`act_event`):
        the failure recorded (`failure_recorded`), else the posted Event kept (`acted`)."""
        done = rayjob_event(created, self.namespace, name)
        with self.failure_recorded(failed, name, *errors):
            yield done
        self.acted(done)

    def _event_request(self, event: RayJobEvent, sequence: int) -> RecordEvent:
        return RecordEvent(
            involved=InvolvedObject(
                kind=KIND_RAYJOB,
                name=self.name,
                namespace=self.namespace,
                uid=self.job.metadata.uid or "",
                api_version=object_api_version(self.job.metadata.annotations),
            ),
            event_id=f"{workflow.info().run_id[:8]}-{sequence}",
            reason=event.reason.value,
            message=event.message,
            type=event.type,
        )

    async def _send_event(self, request: RecordEvent) -> None:
        try:
            await call(stubs.record_event, request, IO.EVENT)
        except ActivityError as error:
            workflow.logger.warning("could not record event %s: %s", request.reason, error.cause or error)

    async def flush_events(self) -> None:
        """The Events and the notifications still being sent (notifications for a bounded time)."""
        tasks, self._event_tasks = self._event_tasks, []
        if tasks:
            await asyncio.gather(*tasks)
        await self.notifier.flush()

    # ---- failures -----------------------------------------------------------------------------------------

    async def pause_after_failure(self, error: BaseException) -> None:
        """After a failed act: wait (durably) with a growing backoff, but no longer than the next deadline
        and only until a handler changes the desired state; then the step runs again."""
        self.state.consecutive_failures += 1
        workflow.logger.warning("RayJob %s/%s: step failed: %s", self.namespace, self.name, error_text(error))
        self.watches.cancel_all()
        retry_at = workflow.now() + failure_backoff(self.state.consecutive_failures)
        deadline = earliest_deadline(rayjob_deadlines(self.job, self.config, self.submitter_finished_at()))
        if deadline is not None:
            retry_at = min(retry_at, deadline.at)
        self.watches.arm_timer(retry_at, "retry after a failed step")
        await self.watches.race(self.changed_since(self.state.spec_version))
        self.watches.cancel_all()

    def submitter_finished_at(self) -> datetime | None:
        submitter = self.state.attempt.submitter
        return submitter.finished_at if submitter is not None else None


def error_text(error: BaseException) -> str:
    """What failed: an activity's own error rather than Temporal's wrapper around it."""
    cause = error.cause if isinstance(error, ActivityError) and error.cause is not None else error
    return str(cause)


class RayJobPart:
    """A part of the RayJob workflow (one phase's steps), working on the core it shares with the others, as
    the RayService workflow's parts share a `RayServicePart`."""

    def __init__(self, core: RayJobCore) -> None:
        self.core = core
