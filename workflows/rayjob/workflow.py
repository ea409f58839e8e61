"""RayJobWorkflow: one KubeRay RayJob, from its manifest to its last deletion action (docs/contract.md §3).

The workflow is KubeRay's RayJob controller for one object: it validates the manifest itself (an invalid one
fails the workflow at once with a non-retryable `ValidationFailed` error, creating nothing), then walks the
KubeRay state machine New -> Initializing -> (Waiting ->) Running -> Complete/Failed, with Suspending /
Suspended and Retrying on the side, and at the end runs the deletion policies at their due times. Its
result is the final RayJob status, camelCase as KubeRay writes it.

Handlers: query `status` (the KubeRay status object), query `events` (the last 50 Events the workflow
recorded), update `apply` (a new desired manifest; returns its generation), update `delete` (what deleting the
RayJob does; the workflow then completes).

Each state's work is one `*_step` method of a part (initializing.py, running.py, release.py, deletion.py),
all sharing one `RayJobCore` (core.py); the main loop runs the step of the current state until the workflow
is done.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from models.base import dump_status
    from models.features import FeatureGates
    from models.manifest import ManifestError, parse_rayjob
    from models.meta import ObjectMeta
    from models.rayjob import JobDeploymentStatus, RayJob, RayJobStatus
    from models.source import (
        ANNOTATION_ADOPTED_RAYJOB,
        RAYPILOT_API_VERSION,
        adopted_rayjob,
        object_api_version,
    )
    from models.validation import validate_rayjob, validate_rayjob_status, validate_update
    from wire import stubs
    from wire.admission import ADMISSION_SIGNAL
    from wire.kubernetes import EarlierRun, EarlierRuns, RunStart
    from wire.kubernetes_observer import KUBE_OBSERVED_SIGNAL, ObservedObject
    from wire.observer import OBSERVED_SIGNAL, ObservedJob
    from wire.watch_book import is_newer_view
    from workflows.decisions.rayjob.annotations import raypilot_annotation_problem
    from workflows.decisions.rayjob.apply import applied_job, is_spec_changed
    from workflows.decisions.rayjob.object import inherits_object, outcome_memo, rayjob_spec_hash
    from workflows.decisions.rayjob.retry_policy import parse_retry_policy
    from workflows.decisions.rayjob.transitions import validation_failed_transition

from workflows.kit.calls import IO, call, call_without_input
from workflows.rayjob.core import RayJobCore, StepFailed
from workflows.rayjob.deletion import DeletionSteps
from workflows.rayjob.driver_log import save_driver_log_if_due
from workflows.rayjob.initializing import InitializingSteps
from workflows.rayjob.release import ReleaseSteps
from workflows.rayjob.running import RunningSteps
from workflows.rayjob.state import RayJobState

VALIDATION_FAILED = "ValidationFailed"
DELETING = "RayJobDeleting"
FINISHED = "RayJobFinished"


def _parse(manifest: Any) -> RayJob:
    """The manifest as a RayJob, its status dropped (the workflow writes the status)."""
    try:
        job = parse_rayjob(manifest)
    except ManifestError as error:
        raise ApplicationError(str(error), type=VALIDATION_FAILED, non_retryable=True) from None
    return job.model_copy(update={"status": RayJobStatus()})


def _identity(manifest: Any) -> RayJob:
    """A RayJob carrying only the manifest's name and namespace, for a manifest that does not parse."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return RayJob(
        metadata=ObjectMeta(
            name=name if isinstance(name, str) else "",
            namespace=namespace if isinstance(namespace, str) and namespace else "default",
        )
    )


@workflow.defn(name="RayJobWorkflow")
class RayJobWorkflow:
    @workflow.init
    def __init__(self, manifest: Any) -> None:
        # `manifest` is typed loosely on purpose: any JSON must reach the workflow, which rejects it itself,
        # rather than fail to decode and leave a workflow task retrying forever.
        self._invalid: ApplicationError | None = None
        try:
            job = _parse(manifest)
        except ApplicationError as error:
            self._invalid = error
            job = _identity(manifest)
        state = RayJobState(
            job=job, workflow_id=workflow.info().workflow_id, generation=job.metadata.generation or 1
        )
        self.core = RayJobCore(state)
        # One part per group of states, all on the same core (as the RayService workflow's parts).
        self.initializing = InitializingSteps(self.core)
        self.running = RunningSteps(self.core)
        self.release = ReleaseSteps(self.core)
        self.deletion = DeletionSteps(self.core)

    @workflow.run
    async def run(self, manifest: Any) -> dict[str, Any]:
        annotations = self.core.job.metadata.annotations
        if ANNOTATION_ADOPTED_RAYJOB in annotations:
            self.core.state.adoption = adopted_rayjob(annotations)
        self.core.state.publishes_job_status = object_api_version(annotations) == RAYPILOT_API_VERSION
        start: RunStart | None = None
        if self._acceptable_to_some_configuration():
            start = await self._read_run_start()
            self.core.state.config = start.config
        else:
            self.core.state.config = await call_without_input(stubs.read_operator_config, IO.STEP)
        self.core.state.observes = self.core.state.k8s_observes = self.core.state.config.job_observer
        error = self._invalid or self._validation_error(self.core.job, self._gates())
        if error is not None:
            self.core.transition(validation_failed_transition(error.message))
            await self.core.notifier.flush()  # raypilot.io/notify "failed" (nothing pending without it)
            raise error
        if start is None:
            # Only if some gate made validation stricter when on (none does today): read what was skipped.
            start = await self._read_run_start()
        self.core.state.retry_policy = parse_retry_policy(self.core.job)
        inherited_from = ""
        if start.earlier is not None and inherits_object(start.earlier):
            self._inherit(start.earlier)
            inherited_from = start.earlier.run_id
        if not inherited_from:
            await self._run_states()
        elif self.core.state.delete_requested:
            await self.deletion.delete_everything(stop_job=False)
        await self.initializing.admission.release_if_done()
        await self.core.flush_events()
        self.core.state.finished = True
        workflow.upsert_memo(
            outcome_memo(
                deleted=self.core.state.deleted,
                generation=self.core.state.generation,
                spec_hash=self.core.state.spec_hash or rayjob_spec_hash(self.core.job),
                inherited_from=inherited_from,
            )
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.status_json()

    def _acceptable_to_some_configuration(self) -> bool:
        """Whether the manifest passes validation with every feature gate on, the most any operator
        configuration allows (a gate only lifts a rejection). Only such a run reads its configuration and
        earlier run together: a manifest no configuration accepts reads the configuration alone and fails at
        once, looking at nothing else."""
        every_gate_on = FeatureGates.every_gate_on()
        return self._invalid is None and self._validation_error(self.core.job, every_gate_on) is None

    async def _read_run_start(self) -> RunStart:
        """The operator configuration and the newest earlier run of this id, read by one local activity (each
        is a billable marker). When Temporal cannot tell the earlier runs now, the configuration alone and no
        earlier run: the RayJob runs (a repeated run is the lesser harm than one that never runs)."""
        info = workflow.info()
        try:
            return await call(stubs.read_run_start, EarlierRuns(info.workflow_id, info.run_id), IO.STEP)
        except ActivityError as error:
            workflow.logger.warning("earlier runs of %s unknown: %s", info.workflow_id, error.cause)
        config = await call_without_input(stubs.read_operator_config, IO.STEP)
        return RunStart(config=config, earlier=None)

    def _inherit(self, earlier: EarlierRun) -> None:
        """Takes over the finished RayJob an earlier run holds, as a re-applied finished RayJob stays as it
        is in Kubernetes: its final status, generation and spec, and no side effect at all."""
        workflow.logger.info(
            "RayJob %s/%s finished in run %s; nothing to run again",
            self.core.namespace,
            self.core.name,
            earlier.run_id,
        )
        status = RayJobStatus.model_validate(earlier.result or {})
        state = self.core.state
        state.job = state.job.model_copy(update={"status": status})
        state.generation = earlier.generation or state.generation
        state.spec_hash = earlier.spec_hash
        self.core.publish()

    async def _run_states(self) -> None:
        phase: JobDeploymentStatus | None = None
        while not self.core.state.deleted:
            if self.core.status.job_deployment_status != phase:
                # A new state wants its own waits; whatever the previous one had in flight is not needed.
                self.core.watches.cancel_all()
                phase = self.core.status.job_deployment_status
            # A failed attempt's driver log, before this step or a deletion can take its cluster away.
            await save_driver_log_if_due(self.core)
            if self.core.state.delete_requested:
                await self.deletion.delete_everything()
                return
            try:
                if await self._step(phase):
                    return
                self.core.state.consecutive_failures = 0
                await self.initializing.admission.release_if_done()
            except (ActivityError, StepFailed) as error:
                await self.core.pause_after_failure(error)

    async def _step(self, phase: JobDeploymentStatus) -> bool:
        """Runs the current state's step; True when the workflow is done."""
        if phase == JobDeploymentStatus.NEW:
            self.initializing.new_step()
        elif phase == JobDeploymentStatus.INITIALIZING:
            await self.initializing.initializing_step()
        elif phase == JobDeploymentStatus.WAITING:
            await self.initializing.waiting_step()
        elif phase == JobDeploymentStatus.RUNNING:
            await self.running.running_step()
        elif phase in (JobDeploymentStatus.SUSPENDING, JobDeploymentStatus.RETRYING):
            await self.release.release_step()
        elif phase == JobDeploymentStatus.SUSPENDED:
            await self.release.suspended_step()
        elif phase in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED):
            return await self.deletion.finished_step()
        else:
            raise ApplicationError(f"unexpected jobDeploymentStatus {phase!r}", non_retryable=True)
        return False

    def status_json(self) -> dict[str, Any]:
        return dump_status(self.core.status)

    def _gates(self) -> FeatureGates:
        return self.core.state.config.feature_gates if self.core.state.config is not None else FeatureGates()

    def _validation_error(self, job: RayJob, gates: FeatureGates) -> ApplicationError | None:
        message = validate_rayjob(job, gates) or raypilot_annotation_problem(job)
        if message is None:
            return None
        return ApplicationError(message, type=VALIDATION_FAILED, non_retryable=True)

    # ---- handlers -----------------------------------------------------------------------------------------

    @workflow.query(name="status")
    def status_query(self) -> dict[str, Any]:
        return self.status_json()

    @workflow.query(name="events")
    def events_query(self) -> list[dict[str, str]]:
        return [record.to_json() for record in self.core.state.events]

    @workflow.signal(name=ADMISSION_SIGNAL)
    def admission_signal(self, position: int) -> None:
        """From the shared RayCluster's admission workflow: this run's place in its queue, 0 once
        admitted (raypilot.io/max-concurrent-jobs)."""
        self.initializing.admission.on_signal(position)

    @workflow.signal(name=OBSERVED_SIGNAL)
    def observed(self, view: ObservedJob) -> None:
        """The cluster observer's newest view of a Ray job: kept when it is of the current job and newer
        than the one held (older versions come from a lost observer attempt still running)."""
        state = self.core.state
        if view.submission_id != self.core.status.job_id:
            return
        held = state.observed.version if state.observed is not None else None
        if is_newer_view(held, tuple(view.version)):  # type: ignore[arg-type]
            state.observed = view

    @workflow.signal(name=KUBE_OBSERVED_SIGNAL)
    def k8s_observed(self, view: ObservedObject) -> None:
        """The Kubernetes observer's newest view of an object this run registered for: kept when newer than
        the one held for that object (older versions come from a lost observer attempt still running)."""
        views = self.core.state.k8s_views
        held = views.get(view.object)
        if is_newer_view(held.version if held is not None else None, tuple(view.version)):  # type: ignore[arg-type]
            views[view.object] = view

    @workflow.update(name="apply")
    async def apply(self, manifest: Any) -> dict[str, int]:
        if self.core.state.config is None:
            # Update-with-start: the validator ran before the operator configuration was read.
            await workflow.wait_condition(lambda: self.core.state.config is not None)
            self._check_apply(manifest)
        applied = _parse(manifest)
        if is_spec_changed(self.core.job, applied):
            self.core.state.generation += 1
        self.core.state.job = applied_job(self.core.job, applied)
        self.core.state.spec_version += 1
        self.core.publish()
        return {"generation": self.core.state.generation}

    @apply.validator
    def _check_apply(self, manifest: Any) -> None:
        if self.core.state.delete_requested:
            raise ApplicationError("the RayJob is being deleted", type=DELETING)
        if self.core.state.finished:
            raise ApplicationError(
                "the RayJob has finished (KubeRay ignores spec changes of a finished RayJob)", type=FINISHED
            )
        if (
            self._invalid is not None
            or self.core.status.job_deployment_status == JobDeploymentStatus.VALIDATION_FAILED
        ):
            raise ApplicationError("the RayJob failed validation", type=VALIDATION_FAILED)
        applied = _parse(manifest)
        desired = applied_job(self.core.job, applied)
        message = (
            validate_update(self.core.job, applied, self._gates())
            or validate_rayjob_status(desired)
            or raypilot_annotation_problem(desired)
        )
        if message is not None:
            raise ApplicationError(message, type=VALIDATION_FAILED)

    @workflow.update(name="delete")
    def delete(self) -> dict[str, Any]:
        """Asks for what deleting the RayJob does (stop its Ray job unless it is terminal, delete what the
        workflow created); the workflow then completes with its final status as result. Returns the status
        as it was when the deletion was asked for: the deletion itself runs in the main loop, and the update
        completes before the workflow does (a workflow task that completes the workflow can be rejected and
        retried when events arrive meanwhile, and an update answered in it would fail)."""
        self.core.state.delete_requested = True
        return self.status_json()
