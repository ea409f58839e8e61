"""Complete and Failed: the deletion policies at their exact due times, and the `delete` update.

KubeRay: the `JobDeploymentStatusComplete, JobDeploymentStatusFailed` branch of `RayJobReconciler.Reconcile`,
`executeDeletionPolicy`, `isDeletionActionCompleted` and the finalizer path for a RayJob being deleted. Which
action runs when is `next_deletion_step`'s decision; the workflow sleeps on a durable timer until the next due
time (endTime + TTL exactly) and completes once nothing remains to do.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities import names
    from activities.dashboard_inputs import RayJobKey, StopJobResult
    from activities.inputs import DeleteObject, ObjectKey, OwnedObjects, RayResourceKey
    from activities.kubernetes_resources import OWNED_KINDS
    from models.naming import KIND_RAYCLUSTER, KIND_RAYJOB
    from models.rayjob import DeletionPolicyType
    from workflows.decisions.deletion import (
        ClusterDeletionObservation,
        deletion_completions,
        next_deletion_step,
    )
    from workflows.decisions.rayjob_transitions import should_stop_ray_job_on_delete
    from workflows.decisions.rayjob_workflow_support import EventReason, rayjob_event

from workflows.rayjob_base import RayJobBase
from workflows.rayjob_calls import act, act_remotely


class DeletionSteps(RayJobBase):
    async def finished_step(self) -> bool:
        """One step of the terminal phase; True once the workflow has nothing left to do."""
        now = workflow.now()
        # Whether anything is overdue at all: only then is the RayCluster worth reading.
        if next_deletion_step(self.job, now, {}, self.config).action is not None:
            if self.state.cluster_for_deletion is None:
                self.state.cluster_for_deletion = await self._observe_cluster()
            completed = deletion_completions(self.state.cluster_for_deletion)
        else:
            completed = {}
        step = next_deletion_step(self.job, now, completed, self.config)
        if step.action is not None:
            return await self._execute(step.action)
        if step.wake_at is None:
            return True
        self.watches.arm_timer(step.wake_at, "deletion policy due")
        await self.watches.race(self.changed_since(self.state.spec_version))
        # Time passed (or the spec changed): read the cluster again before the next action.
        self.state.cluster_for_deletion = None
        return False

    async def _observe_cluster(self) -> ClusterDeletionObservation:
        found = await act(names.GET_RAYCLUSTER, ObjectKey(self.namespace, self.status.ray_cluster_name))
        return ClusterDeletionObservation.from_manifest(found)

    async def _execute(self, policy: DeletionPolicyType) -> bool:
        cluster_name = self.status.ray_cluster_name
        workflow.logger.info("RayJob %s/%s: deletion policy %s", self.namespace, self.name, policy.value)
        if policy == DeletionPolicyType.DELETE_SELF:
            await self.delete_everything(stop_job=False)
            await act(names.DELETE_RAY_RESOURCE, RayResourceKey(KIND_RAYJOB, self.namespace, self.name))
            return True
        if policy == DeletionPolicyType.DELETE_CLUSTER:
            try:
                deleted = await act(names.DELETE_RAYCLUSTER, DeleteObject(self.namespace, cluster_name))
            except ActivityError as error:
                reason, message = EventReason.FAILED_TO_DELETE_RAYCLUSTER, str(error.cause or error)
                self.record(rayjob_event(reason, self.namespace, cluster_name, message))
                raise
            if deleted:
                self.record(rayjob_event(EventReason.DELETED_RAYCLUSTER, self.namespace, cluster_name))
            self.state.cluster_for_deletion = ClusterDeletionObservation(exists=deleted, deleting=deleted)
        elif policy == DeletionPolicyType.DELETE_WORKERS:
            try:
                updated = await act(names.SUSPEND_WORKER_GROUPS, ObjectKey(self.namespace, cluster_name))
            except ActivityError as error:
                reason, message = EventReason.FAILED_TO_UPDATE_RAYCLUSTER, str(error.cause or error)
                self.record(rayjob_event(reason, self.namespace, cluster_name, message))
                raise
            if updated is not None:
                self.record(rayjob_event(EventReason.UPDATED_RAYCLUSTER, self.namespace, cluster_name))
            self.state.cluster_for_deletion = ClusterDeletionObservation.from_manifest(updated)
        return False

    async def delete_everything(self, *, stop_job: bool = True) -> None:
        """What deleting the RayJob does: stop its Ray job unless it is terminal (a failure is only logged,
        as in KubeRay), then delete every object the workflow created (never a clusterSelector cluster)."""
        self.watches.cancel_all()
        attempt = self.state.attempt
        status = self.status
        reachable = bool(status.job_id and status.dashboard_url) and attempt.cluster_spec is not None
        if stop_job and reachable and should_stop_ray_job_on_delete(status):
            try:
                await act(
                    names.STOP_JOB, RayJobKey(self.dashboard(), status.job_id), result_type=StopJobResult
                )
            except ActivityError as error:
                workflow.logger.warning("could not stop Ray job %s: %s", status.job_id, error.cause)
        kinds = tuple(kind for kind in OWNED_KINDS if self.uses_own_cluster() or kind != KIND_RAYCLUSTER)
        await act_remotely(
            names.DELETE_OWNED_OBJECTS, OwnedObjects(self.namespace, KIND_RAYJOB, self.name, kinds=kinds)
        )
        self.state.deleted = True
