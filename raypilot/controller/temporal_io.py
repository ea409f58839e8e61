"""The controller's Temporal I/O: the latest run of an object's workflow, update-with-start, the `delete`
update, a finished RayJob's deletion, the status, and the phases of all running workflows in one list."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus

from models.naming import ObjectRef, workflow_id
from raypilot.controller.decide import MEMO_OBJECT_UID, RunView
from raypilot.runs.cleanup import delete_finished_runs
from raypilot.runs.lookup import latest_outcome, latest_run, with_worker_patience
from raypilot.runs.start import decide_apply, update_with_start
from workflows.decisions.rayjob.object import RunState
from workflows.decisions.rayservice.deletion import orphan_request
from workflows.search_attributes import MEMO_DRIVER_LOG, MEMO_JOB_STATUS, RAY_PHASE


class ControllerTemporal:
    def __init__(self, client: Client, task_queue: str) -> None:
        self.client, self.task_queue = client, task_queue

    def _handle(self, ref: ObjectRef) -> Any:
        return self.client.get_workflow_handle(workflow_id(ref.kind, ref.namespace, ref.name))

    async def latest(self, ref: ObjectRef) -> tuple[RunView | None, WorkflowExecutionDescription | None]:
        description = await latest_run(self._handle(ref))
        if description is None:
            return None, None
        state = RunState(description.status.name if description.status else "RUNNING")
        memo = await description.memo()
        uid = memo.get(MEMO_OBJECT_UID)
        outcome = await latest_outcome(description)
        return RunView(state, outcome, uid if isinstance(uid, str) and uid else None), description

    async def start_or_apply(
        self, ref: ObjectRef, manifest: dict[str, Any], uid: str
    ) -> dict[str, Any] | None:
        """The `apply` update, starting the run (memo: the object's uid) when none holds the id; None when a
        run completed under it (the next event decides again)."""
        decision = await decide_apply(ref, await latest_run(self._handle(ref)))
        if decision.unchanged:
            return None
        return await update_with_start(
            self.client, ref, manifest, decision.reuse_policy, self.task_queue, memo={MEMO_OBJECT_UID: uid}
        )

    async def delete_workflow(self, ref: ObjectRef, *, let_go: bool = False) -> None:
        """The `delete` update; `let_go`: with the Orphan policy (what the run made stays)."""
        handle = self._handle(ref)
        update = (
            handle.execute_update("delete", orphan_request(), result_type=dict)
            if let_go
            else handle.execute_update("delete", result_type=dict)
        )
        await with_worker_patience(update, "delete", self.task_queue)

    async def delete_finished(self, ref: ObjectRef, description: WorkflowExecutionDescription) -> None:
        """What `raypilot delete` does to a finished RayJob, but for its objects: its runs are removed from
        Temporal (in the background). What it left needs no deleting here: it is owned by the raypilot.io
        object (ownerReferences), so Kubernetes' garbage collector deletes it with the object; the
        controller's role has no delete rights on RayClusters, Jobs or Services."""
        await delete_finished_runs(self.client, self._handle(ref), description.run_id, wait=False)

    async def status(self, ref: ObjectRef, uid: str) -> tuple[dict[str, Any], bool] | None:
        """The KubeRay status of the object's run (a closed RayJob's: its result) and whether that run has
        closed; None when no run of this object has one."""
        run, description = await self.latest(ref)
        if run is None or description is None or (run.object_uid is not None and run.object_uid != uid):
            return None
        handle = self._handle(ref)
        if description.status == WorkflowExecutionStatus.RUNNING:
            status: dict[str, Any] = await handle.query("status")
            return status, False
        if description.status == WorkflowExecutionStatus.COMPLETED and ref.kind == "RayJob":
            result = await handle.result(follow_runs=False)
            return (result, True) if isinstance(result, dict) else None
        return None

    async def phases(self) -> dict[str, str]:
        """workflow id -> RayPhase (and a RayJob's jobStatus memo) of every running RayJob/RayService
        workflow: one visibility list per tick, so the controller asks a workflow for its status only when
        what `kubectl get` shows may have changed."""
        phases: dict[str, str] = {}
        query = "ExecutionStatus = 'Running' AND WorkflowType IN ('RayJobWorkflow', 'RayServiceWorkflow')"
        async for execution in self.client.list_workflows(query):
            phase = execution.typed_search_attributes.get(RAY_PHASE) or ""
            memo = await execution.memo()
            shown = [
                value for key in (MEMO_JOB_STATUS, MEMO_DRIVER_LOG) if isinstance(value := memo.get(key), str)
            ]
            phases[execution.id] = "/".join([phase, *shown])
        return phases
