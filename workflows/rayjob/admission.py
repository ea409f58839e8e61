"""Queueing on a shared cluster, the RayJob's side: a clusterSelector RayJob whose
RayCluster carries `raypilot.io/max-concurrent-jobs` asks the cluster's admission workflow for a slot before
it submits, waits in Initializing (its place in the `Queued` condition) until an `admission` signal admits
it, and gives the slot back as soon as its attempt ends (Complete, Failed, Retrying, Suspending) or it is
deleted. Without the annotation nothing here runs.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.meta import Condition, ConditionStatus, with_condition_replaced
    from models.rayjob import JobDeploymentStatus
    from wire import stubs
    from wire.admission import RELEASE_SIGNAL, AdmissionRequest, AdmissionTicket, admission_workflow_id
    from workflows.decisions.admission import max_concurrent_jobs
    from workflows.decisions.rayjob.deadlines import earliest_deadline, rayjob_deadlines
    from workflows.decisions.rayjob.status import kube_time

from workflows.kit.calls import IO, call
from workflows.rayjob.core import RayJobPart

QUEUED_CONDITION = "Queued"
# While in one of these, a RayJob holds (or waits for) its slot.
HOLDING_PHASES = frozenset(
    {JobDeploymentStatus.INITIALIZING, JobDeploymentStatus.WAITING, JobDeploymentStatus.RUNNING}
)


class AdmissionSteps(RayJobPart):
    def note_cluster(self, cluster: dict[str, Any]) -> None:
        """The selected RayCluster as found: its limit, if it has one."""
        annotations = (cluster.get("metadata") or {}).get("annotations") or {}
        self.core.state.attempt.admission_limit = max_concurrent_jobs(annotations)

    async def wait_for_slot(self) -> bool:
        """True once this attempt may submit: no limit, or admitted. Otherwise asks for a slot (once per
        attempt) and waits for the admission signal, the next deadline or a handler; False then (the step
        runs again)."""
        state = self.core.state
        limit = state.attempt.admission_limit
        if limit is None or state.queue_position == 0:
            return True
        if not state.attempt.enqueued:
            request = AdmissionRequest(
                self.core.namespace, self.core.status.ray_cluster_name, self._ticket(), limit
            )
            # A regular activity, not a local one: a local activity keeps this workflow task open while the
            # admission workflow must run its own task to answer (a worker short of task slots would stall).
            answer = await call(stubs.enqueue_for_admission, request, IO.LAST_STEP)
            state.attempt.enqueued = True
            state.holds_admission = True
            # A signal may have overtaken the answer: a place only ever gets better.
            seen = state.queue_position
            state.queue_position = answer.position if seen is None else min(seen, answer.position)
            self._show_place(limit)
            if state.queue_position == 0:
                return True
        seen_position = state.queue_position
        deadline = earliest_deadline(rayjob_deadlines(self.core.job, self.core.config))
        self.core.watches.arm_timer(deadline.at if deadline else None, deadline.name if deadline else "")
        changed = self.core.changed_since(state.spec_version)
        await self.core.watches.race(lambda: changed() or state.queue_position != seen_position)
        self._show_place(limit)
        return state.queue_position == 0

    def on_signal(self, position: int) -> None:
        state = self.core.state
        if state.holds_admission:
            seen = state.queue_position
            state.queue_position = position if seen is None else min(seen, position)

    async def release_if_done(self) -> None:
        """Gives the slot (or the place in the queue) back once the attempt no longer runs."""
        state = self.core.state
        if not state.holds_admission:
            return
        if not state.deleted and self.core.status.job_deployment_status in HOLDING_PHASES:
            return
        state.holds_admission = False
        state.queue_position = None
        state.attempt.enqueued = False
        handle = workflow.get_external_workflow_handle(
            admission_workflow_id(self.core.namespace, self.core.status.ray_cluster_name)
        )
        try:
            await handle.signal(RELEASE_SIGNAL, self._ticket())
        except Exception as error:
            # The admission workflow is gone (it releases closed runs itself when it runs again).
            workflow.logger.info("could not release the slot: %s", error)

    def _ticket(self) -> AdmissionTicket:
        return AdmissionTicket(self.core.state.workflow_id, workflow.info().run_id)

    def _show_place(self, limit: int) -> None:
        position = self.core.state.queue_position
        cluster = f"{self.core.namespace}/{self.core.status.ray_cluster_name}"
        if position == 0:
            condition = Condition(
                type=QUEUED_CONDITION,
                status=ConditionStatus.FALSE,
                last_transition_time=kube_time(workflow.now()),
                reason="Admitted",
                message=f"admitted to RayCluster {cluster} (raypilot.io/max-concurrent-jobs: {limit})",
            )
        else:
            condition = Condition(
                type=QUEUED_CONDITION,
                status=ConditionStatus.TRUE,
                last_transition_time=kube_time(workflow.now()),
                reason="WaitingForSlot",
                message=(
                    f"position {position} in the queue of RayCluster {cluster} "
                    f"(raypilot.io/max-concurrent-jobs: {limit})"
                ),
            )
        self.core.update_status(conditions=with_condition_replaced(self.core.status.conditions, condition))
