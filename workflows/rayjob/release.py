"""Suspending, Retrying and Suspended: release the attempt's RayCluster and submitter Job, wait until both
are gone, then forget the attempt (Suspending -> Suspended, Retrying -> New); Suspended waits for
`suspend: false`.

KubeRay: the `JobDeploymentStatusSuspending, JobDeploymentStatusRetrying` and `JobDeploymentStatusSuspended`
branches of `RayJobReconciler.Reconcile`, `deleteClusterResources` and `deleteSubmitterJob`. Suspending is
atomic: once begun it finishes whatever `suspend` says meanwhile. A RayCluster held by a finalizer keeps the
RayJob Suspending (or Retrying) until it is really gone; the workflow waits for that with one wait activity
per object instead of polling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.naming import submitter_job_name
    from models.rayjob import JobDeploymentStatus, JobSubmissionMode
    from wire import stubs
    from wire.kubernetes import DeleteObject, ObjectKey, Observation, WaitObject, WaitRayCluster
    from wire.stubs.common import Activity
    from wire.views import job_view, raycluster_view
    from workflows.decisions.rayjob.events import (
        EventReason,
        rayjob_event,
    )
    from workflows.decisions.rayjob.retry import status_after_resources_released
    from workflows.decisions.rayjob.transitions import resume_transition

from workflows.kit.calls import IO, call
from workflows.rayjob.core import RayJobPart
from workflows.rayjob.retries import restart_on_same_cluster, retries_on_same_cluster
from workflows.rayjob.state import AttemptState

CLUSTER_GONE_WATCH = "cluster-gone"
SUBMITTER_GONE_WATCH = "submitter-gone"
GONE: dict[str, Any] = {"exists": False}


class ReleaseSteps(RayJobPart):
    async def release_step(self) -> None:
        attempt = self.core.state.attempt
        cluster_name = self.core.status.ray_cluster_name
        same_cluster = retries_on_same_cluster(self.core.state)
        releases_cluster = self.core.uses_own_cluster() and bool(cluster_name) and not same_cluster
        releases_submitter = self.core.job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE
        if releases_cluster and not attempt.cluster_deletion_requested:
            attempt.cluster_view = await self._delete_cluster(cluster_name)
            attempt.cluster_deletion_requested = True
        if releases_submitter and not attempt.submitter_deletion_requested:
            attempt.submitter_job_view = await self._delete_submitter()
            attempt.submitter_deletion_requested = True
        cluster_gone = not releases_cluster or attempt.cluster_view == GONE
        submitter_gone = not releases_submitter or attempt.submitter_job_view == GONE
        if cluster_gone and submitter_gone:
            if await self._backing_off():
                return
            if same_cluster:
                self.core.set_status(restart_on_same_cluster(self.core.state, workflow.now()))
                return
            self.core.state.attempt = AttemptState()
            self.core.set_status(status_after_resources_released(self.core.status))
            return
        if not cluster_gone:
            cluster_request = WaitRayCluster(
                self.core.namespace, cluster_name, attempt.cluster_view, until="change"
            )
            self.core.watches.start(
                CLUSTER_GONE_WATCH,
                lambda: call(stubs.wait_raycluster, cluster_request, IO.WAIT, summary="RayCluster gone"),
            )
        if not submitter_gone:
            job_request = WaitObject(
                self.core.namespace, submitter_job_name(self.core.name), attempt.submitter_job_view
            )
            self.core.watches.start(
                SUBMITTER_GONE_WATCH,
                lambda: call(stubs.wait_submitter_job, job_request, IO.WAIT, summary="submitter Job gone"),
            )
        # Only a deletion interrupts: a suspend flipped back meanwhile does not stop Suspending (atomic).
        for finished in (await self.core.watches.race(lambda: self.core.state.delete_requested)).finished:
            observation: Observation = finished.value()
            if finished.key == CLUSTER_GONE_WATCH:
                attempt.cluster_view = observation.view
            elif finished.key == SUBMITTER_GONE_WATCH:
                attempt.submitter_job_view = observation.view

    async def _backing_off(self) -> bool:
        """Retrying with a retry policy's back-off: True after a wait on the durable timer until the next
        attempt may start (or a deletion interrupted it); the step then runs again. The previous attempt's
        cluster is already gone here, so attempts never overlap."""
        retry_at = self.core.state.retry_at
        phase = self.core.status.job_deployment_status
        if retry_at is None or phase != JobDeploymentStatus.RETRYING or workflow.now() >= retry_at:
            return False
        self.core.watches.arm_timer(retry_at, "retry back-off")
        await self.core.watches.race(lambda: self.core.state.delete_requested)
        self.core.watches.cancel_all()
        return True

    async def suspended_step(self) -> None:
        """Suspended until an `apply` sets suspend back to false (-> New: a new attempt)."""
        resume = resume_transition(self.core.job)
        if resume is not None:
            self.core.transition(resume)
            return
        await self.core.watches.race(self.core.changed_since(self.core.state.spec_version))

    async def _delete_cluster(self, cluster_name: str) -> dict[str, Any]:
        """Asks for the RayCluster's deletion; returns its view afterwards (GONE once it is)."""
        return await self._delete(_RAYCLUSTER, cluster_name)

    async def _delete_submitter(self) -> dict[str, Any]:
        """Asks for the submitter Job's deletion; returns its view afterwards (GONE once it is)."""
        return await self._delete(_SUBMITTER, submitter_job_name(self.core.name))

    async def _delete(self, kind: _Released, name: str) -> dict[str, Any]:
        deleted_event = rayjob_event(kind.deleted, self.core.namespace, name)
        # Posted by the delete itself, also when the read below fails: the deletion was asked for. The
        # `events` query keeps it only once the read succeeded.
        request = DeleteObject(self.core.namespace, name, event=self.core.act_event(deleted_event))
        with self.core.failure_recorded(kind.failed, name):
            deleted = await call(kind.delete, request, IO.STEP)
            key = ObjectKey(self.core.namespace, name)
            remaining = await call(kind.get, key, IO.STEP) if deleted else None
        if deleted:
            self.core.acted(deleted_event)
        return kind.view(remaining) if remaining is not None else GONE


@dataclass(frozen=True)
class _Released:
    """What releasing one kind of the RayJob's objects calls, how it views what remains, and the Events'
    reasons."""

    delete: Activity[DeleteObject, bool]
    get: Activity[ObjectKey, dict[str, Any] | None]
    view: Callable[[dict[str, Any]], dict[str, Any]]
    deleted: EventReason
    failed: EventReason


_RAYCLUSTER: Final = _Released(
    stubs.delete_raycluster,
    stubs.get_raycluster,
    raycluster_view,
    EventReason.DELETED_RAYCLUSTER,
    EventReason.FAILED_TO_DELETE_RAYCLUSTER,
)
_SUBMITTER: Final = _Released(
    stubs.delete_job,
    stubs.get_job,
    job_view,
    EventReason.DELETED_RAYJOB_SUBMITTER,
    EventReason.FAILED_TO_DELETE_RAYJOB_SUBMITTER,
)
