"""New, Initializing and Waiting: start an attempt, get its RayCluster ready, find the dashboard, create the
K8sJobMode submitter, and (InteractiveMode) wait for the user's job id.

KubeRay: the `JobDeploymentStatusNew`, `JobDeploymentStatusInitializing` and `JobDeploymentStatusWaiting`
branches of `RayJobReconciler.Reconcile`, `getOrCreateRayClusterInstance` and `createK8sJobIfNeed`. Where
KubeRay re-reads the cluster every few seconds, the workflow runs one wait activity until the cluster is
ready, raced against the attempt's deadline timer and the handlers.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.raycluster import ClusterState, RayClusterSpec, RayClusterStatus
    from models.rayjob import JobSubmissionMode
    from wire import stubs
    from wire.kubernetes import ObjectKey, Observation, WaitRayCluster
    from wire.kubernetes_observer import ends_cluster_wait
    from wire.views import job_view
    from workflows.decisions.rayjob.adoption import adopted_attempt, adopted_parts, kuberay_submission
    from workflows.decisions.rayjob.cluster import (
        DashboardPortNotFound,
        cluster_head_service_name,
        dashboard_url_from_head_service,
    )
    from workflows.decisions.rayjob.dashboard import dashboard_url_from_cluster_status
    from workflows.decisions.rayjob.deadlines import earliest_deadline, rayjob_deadlines
    from workflows.decisions.rayjob.events import (
        EventReason,
        rayjob_event,
    )
    from workflows.decisions.rayjob.observations import k8s_job_submitter_state
    from workflows.decisions.rayjob.submitter import SubmitCommandError, submitter_job_manifest
    from workflows.decisions.rayjob.transitions import (
        adopt_interactive_job_id,
        start_attempt,
        state_check_transition,
        transition_when_cluster_ready,
    )

from workflows.kit.calls import IO, call
from workflows.rayjob.admission import AdmissionSteps
from workflows.rayjob.core import RayJobCore, RayJobPart, StepFailed
from workflows.rayjob.k8s_watches import KubernetesWatches
from workflows.rayjob.retries import job_for_attempt
from workflows.rayjob.state import AttemptState

CLUSTER_WATCH = "cluster"


class InitializingSteps(RayJobPart):
    def __init__(self, core: RayJobCore) -> None:
        super().__init__(core)
        self.admission = AdmissionSteps(core)
        self.k8s = KubernetesWatches(core)

    def new_step(self) -> None:
        """New -> Initializing: this attempt's job id, cluster name and startTime (an adopted RayJob's first
        attempt: those KubeRay left, and what exists already is neither created nor submitted again)."""
        self.core.state.attempt = attempt = AttemptState()
        adopted, self.core.state.adoption = self.core.state.adoption, None
        if adopted is None:
            self.core.set_status(start_attempt(self.core.job, workflow.now(), workflow.random()))
            return
        self.core.set_status(adopted_attempt(self.core.job, adopted, workflow.now(), workflow.random()))
        parts = adopted_parts(self.core.job, adopted)
        if parts.cluster and self.core.uses_own_cluster():
            attempt.cluster_spec = self.core.job.spec.ray_cluster_spec
            attempt.cluster_created = True
        attempt.head_service_created = parts.head_service
        attempt.submitter_created = parts.submitter
        attempt.submitted = parts.submitted
        attempt.finds_submission = parts.lookup
        workflow.logger.info(
            "RayJob %s/%s: adopted from KubeRay (RayCluster %s, Ray job %s)",
            self.core.namespace,
            self.core.name,
            self.core.status.ray_cluster_name,
            self.core.status.job_id or "not submitted yet",
        )

    async def initializing_step(self) -> None:
        check = state_check_transition(self.core.job, workflow.now(), self.core.config)
        if check is not None:
            self.core.transition(check)
            return
        attempt = self.core.state.attempt
        if attempt.cluster_spec is None:
            await self._ensure_cluster()
        if not self.core.status.dashboard_url:
            cluster = await self._await_cluster_ready()
            if cluster is None:
                return
            self.core.update_status(dashboard_url=await self._dashboard_url(cluster))
        if attempt.finds_submission:
            await self._find_kuberay_submission()
        if not await self.admission.wait_for_slot():
            return
        next_state = transition_when_cluster_ready(self.core.job)
        if (
            self.core.job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE
            and not attempt.submitter_created
        ):
            await self._create_submitter()
        self.core.transition(next_state)

    async def waiting_step(self) -> None:
        """InteractiveMode: wait for an `apply` that sets spec.jobId (or the preRunning deadline)."""
        check = state_check_transition(self.core.job, workflow.now(), self.core.config)
        if check is not None:
            self.core.transition(check)
            return
        adopted = adopt_interactive_job_id(self.core.job)
        if adopted is not None:
            self.core.set_status(adopted)
            return
        deadline = earliest_deadline(rayjob_deadlines(self.core.job, self.core.config))
        self.core.watches.arm_timer(deadline.at if deadline else None, "preRunningDeadlineSeconds")
        await self.core.watches.race(self.core.changed_since(self.core.state.spec_version))

    # ---- the RayCluster ---------------------------------------------------------------------------------

    async def _ensure_cluster(self) -> None:
        """Create this attempt's RayCluster (or, in clusterSelector mode, find the selected one)."""
        attempt = self.core.state.attempt
        cluster_name = self.core.status.ray_cluster_name
        if not self.core.uses_own_cluster():
            found = await call(stubs.get_raycluster, ObjectKey(self.core.namespace, cluster_name), IO.STEP)
            if found is None:
                self.core.record(
                    rayjob_event(EventReason.RAYCLUSTER_NOT_FOUND, self.core.namespace, cluster_name)
                )
                raise StepFailed(
                    "clusterSelector mode is enabled, but RayCluster "
                    f"{self.core.namespace}/{cluster_name} is not found"
                )
            try:
                attempt.cluster_spec = RayClusterSpec.model_validate(found.get("spec") or {})
            except ValidationError as error:
                raise StepFailed(f"RayCluster {cluster_name} cannot be read: {error}") from None
            self.core.set_cluster_status(found)
            self.admission.note_cluster(found)
            return
        with self.core.creating(
            EventReason.CREATED_RAYCLUSTER,
            EventReason.FAILED_TO_CREATE_RAYCLUSTER,
            cluster_name,
            SubmitCommandError,
            ValueError,
        ) as created_event:
            request = self.core.cluster_create_request(cluster_name, self.core.act_event(created_event))
            created: dict[str, Any] = await call(stubs.create_raycluster, request, IO.STEP)
        attempt.cluster_created = True
        attempt.cluster_spec = self.core.job.spec.ray_cluster_spec
        self.core.set_cluster_status(created)

    async def _await_cluster_ready(self) -> dict[str, Any] | None:
        """The RayCluster once `status.state` is ready; None when a deadline, a handler or the cluster's
        disappearance interrupted the wait (the step then runs again)."""
        if (
            self.core.status.ray_cluster_status.state == ClusterState.READY
            and self.core.state.attempt.cluster_spec
        ):
            return {"status": self.core.status.ray_cluster_status.model_dump(mode="json", by_alias=True)}
        cluster_name = self.core.status.ray_cluster_name
        deadline = earliest_deadline(rayjob_deadlines(self.core.job, self.core.config))
        if await self.k8s.register("RayCluster", cluster_name, "ready"):
            last = self.k8s.consumed("RayCluster", cluster_name)
            self.core.watches.start(
                CLUSTER_WATCH,
                lambda: self.k8s.next_view("RayCluster", cluster_name, last, ends_cluster_wait),
            )
        else:
            request = WaitRayCluster(self.core.namespace, cluster_name, until="ready")
            self.core.watches.start(
                CLUSTER_WATCH,
                lambda: call(stubs.wait_raycluster, request, IO.WAIT, summary="RayCluster ready"),
            )
        self.core.watches.arm_timer(deadline.at if deadline else None, deadline.name if deadline else "")
        for finished in (
            await self.core.watches.race(self.core.changed_since(self.core.state.spec_version))
        ).finished:
            if finished.key != CLUSTER_WATCH:
                continue
            observation: Observation = finished.value()
            if observation.object is None:
                # Gone (deleted under us): create it again, or look for the selected one again.
                self.core.state.attempt.cluster_spec = None
                self.k8s.forget("RayCluster", cluster_name)
                return None
            self.core.set_cluster_status(observation.object)
            if self.core.status.ray_cluster_status.state == ClusterState.READY:
                self.core.watches.cancel(CLUSTER_WATCH)
                return observation.object
        return None

    async def _dashboard_url(self, cluster: dict[str, Any]) -> str:
        status = RayClusterStatus.model_validate(cluster.get("status") or {})
        url = dashboard_url_from_cluster_status(status, self.core.namespace, self.core.config.cluster_domain)
        if url is not None:
            return url
        service_name = cluster_head_service_name(self.core.status.ray_cluster_name, self.core.cluster_spec())
        service = await call(stubs.get_service, ObjectKey(self.core.namespace, service_name), IO.STEP)
        if service is None:
            raise StepFailed(
                f"the head Service {self.core.namespace}/{service_name} of the RayCluster is not found"
            )
        try:
            return dashboard_url_from_head_service(service, self.core.config.cluster_domain)
        except DashboardPortNotFound as error:
            raise StepFailed(str(error)) from None

    async def _find_kuberay_submission(self) -> None:
        """An HTTPMode RayJob adopted from KubeRay: the Ray job KubeRay submitted, found on the dashboard by
        KubeRay's rules, is the one this attempt follows (never submitted again); none found: KubeRay had
        submitted nothing, and the attempt submits under its own id as usual."""
        jobs = await call(stubs.list_submitted_jobs, self.core.dashboard(), IO.STEP)
        found = kuberay_submission(self.core.job, jobs)
        attempt = self.core.state.attempt
        attempt.finds_submission = False
        if found:
            self.core.update_status(job_id=found)
            attempt.submitted = True
        workflow.logger.info(
            "RayJob %s/%s: KubeRay's Ray job on the dashboard: %s",
            self.core.namespace,
            self.core.name,
            found or "none (nothing was submitted)",
        )

    # ---- K8sJobMode submitter ---------------------------------------------------------------------------

    async def _create_submitter(self) -> None:
        attempt = self.core.state.attempt
        job_name = self.core.name
        with self.core.creating(
            EventReason.CREATED_RAYJOB_SUBMITTER,
            EventReason.FAILED_TO_CREATE_RAYJOB_SUBMITTER,
            job_name,
            SubmitCommandError,
        ) as created_event:
            manifest = submitter_job_manifest(
                job_for_attempt(self.core.state),
                cluster_name=self.core.status.ray_cluster_name,
                cluster_spec=self.core.cluster_spec(),
                workflow_id=self.core.state.workflow_id,
                gates=self.core.config.feature_gates,
            )
            request = self.core.owned_create(manifest, self.core.act_event(created_event))
            created: dict[str, Any] = await call(stubs.create_job, request, IO.STEP)
        attempt.submitter_created = True
        attempt.submitter_view = job_view(created)
        attempt.submitter = k8s_job_submitter_state(created.get("status"))
