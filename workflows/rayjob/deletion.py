"""Complete and Failed: the deletion policies at their exact due times, and the `delete` update.

KubeRay: the `JobDeploymentStatusComplete, JobDeploymentStatusFailed` branch of `RayJobReconciler.Reconcile`,
`executeDeletionPolicy`, `isDeletionActionCompleted` and the finalizer path for a RayJob being deleted. Which
action runs when is `next_finished_step`'s decision (KubeRay's `next_deletion_step`, then
raypilot.io/cleanup-after for a cluster left behind); the workflow sleeps on a durable timer until the next
due time (endTime + TTL exactly) and completes once nothing remains to do.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.naming import KIND_RAYCLUSTER, KIND_RAYJOB
    from models.rayjob import DeletionPolicyType
    from models.source import object_api_version
    from wire import stubs
    from wire.dashboard import RayJobKey
    from wire.kubernetes import OWNED_KINDS, DeleteObject, ObjectKey, OwnedObjects, RayResourceKey
    from workflows.decisions.rayjob.deletion import (
        ClusterDeletionObservation,
        deletion_completions,
    )
    from workflows.decisions.rayjob.events import (
        EventReason,
        rayjob_event,
    )
    from workflows.decisions.rayjob.leftovers import next_finished_step
    from workflows.decisions.rayjob.transitions import should_stop_ray_job_on_delete

from workflows.kit.calls import IO, call
from workflows.rayjob.core import RayJobPart
from workflows.rayjob.leftovers import note_cleanup, report_left_behind


class DeletionSteps(RayJobPart):
    async def finished_step(self) -> bool:
        """One step of the terminal phase; True once the workflow has nothing left to do."""
        now = workflow.now()
        report_left_behind(self.core)
        # Whether anything is overdue at all: only then is the RayCluster worth reading.
        if next_finished_step(self.core.job, now, {}, self.core.config).action is not None:
            if self.core.state.cluster_for_deletion is None:
                self.core.state.cluster_for_deletion = await self._observe_cluster()
            completed = deletion_completions(self.core.state.cluster_for_deletion)
        else:
            completed = {}
        step = next_finished_step(self.core.job, now, completed, self.core.config)
        if step.action is not None:
            done = await self._execute(step.action)
            note_cleanup(self.core, step.action)
            return done
        if step.wake_at is None:
            return True
        # The TTL timer: the next deletion action is due at endTime + its TTL (ttlSecondsAfterFinished or a
        # deletion rule's ttlSeconds) or at raypilot.io/cleanup-after, decided by next_finished_step.
        self.core.watches.arm_timer(step.wake_at, "deletion policy due")
        await self.core.watches.race(self.core.changed_since(self.core.state.spec_version))
        # Time passed (or the spec changed): read the cluster again before the next action.
        self.core.state.cluster_for_deletion = None
        return False

    async def _observe_cluster(self) -> ClusterDeletionObservation:
        found = await call(
            stubs.get_raycluster, ObjectKey(self.core.namespace, self.core.status.ray_cluster_name), IO.STEP
        )
        return ClusterDeletionObservation.from_manifest(found)

    async def _execute(self, policy: DeletionPolicyType) -> bool:
        cluster_name = self.core.status.ray_cluster_name
        self.core.metrics.deletion_action(self.core.job, policy, self.core.config)
        workflow.logger.info(
            "RayJob %s/%s: deletion policy %s", self.core.namespace, self.core.name, policy.value
        )
        if policy == DeletionPolicyType.DELETE_SELF:
            await self.delete_everything(stop_job=False)
            await call(
                stubs.delete_ray_resource,
                RayResourceKey(
                    KIND_RAYJOB,
                    self.core.namespace,
                    self.core.name,
                    object_api_version(self.core.job.metadata.annotations),
                ),
                IO.STEP,
            )
            return True
        if policy == DeletionPolicyType.DELETE_CLUSTER:
            deleted_event = rayjob_event(EventReason.DELETED_RAYCLUSTER, self.core.namespace, cluster_name)
            event = self.core.act_event(deleted_event)
            request = DeleteObject(self.core.namespace, cluster_name, event=event)
            with self.core.failure_recorded(EventReason.FAILED_TO_DELETE_RAYCLUSTER, cluster_name):
                deleted = await call(stubs.delete_raycluster, request, IO.STEP)
            if deleted:
                self.core.acted(deleted_event)
            self.core.state.cluster_for_deletion = ClusterDeletionObservation(
                exists=deleted, deleting=deleted
            )
        elif policy == DeletionPolicyType.DELETE_WORKERS:
            with self.core.failure_recorded(EventReason.FAILED_TO_UPDATE_RAYCLUSTER, cluster_name):
                updated = await call(
                    stubs.suspend_worker_groups, ObjectKey(self.core.namespace, cluster_name), IO.STEP
                )
            if updated is not None:
                self.core.record(
                    rayjob_event(EventReason.UPDATED_RAYCLUSTER, self.core.namespace, cluster_name)
                )
            self.core.state.cluster_for_deletion = ClusterDeletionObservation.from_manifest(updated)
        return False

    async def delete_everything(self, *, stop_job: bool = True) -> None:
        """What deleting the RayJob does: stop its Ray job unless it is terminal (a failure is only logged,
        as in KubeRay), then delete every object the workflow created (never a clusterSelector cluster)."""
        self.core.watches.cancel_all()
        attempt = self.core.state.attempt
        status = self.core.status
        reachable = bool(status.job_id and status.dashboard_url) and attempt.cluster_spec is not None
        if stop_job and reachable and should_stop_ray_job_on_delete(status):
            try:
                await call(stubs.stop_job, RayJobKey(self.core.dashboard(), status.job_id), IO.STEP)
            except ActivityError as error:
                workflow.logger.warning("could not stop Ray job %s: %s", status.job_id, error.cause)
        kinds = tuple(kind for kind in OWNED_KINDS if self.core.uses_own_cluster() or kind != KIND_RAYCLUSTER)
        owned = OwnedObjects(self.core.namespace, KIND_RAYJOB, self.core.name, kinds=kinds)
        await call(stubs.delete_owned_objects, owned, IO.LAST_STEP)
        self.core.state.deleted = True
