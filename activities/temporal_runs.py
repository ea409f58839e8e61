"""Temporal's own API as an activity: the newest earlier run of a workflow id, so that a RayJob run started
again with a used id (e.g. `temporal workflow start`) can tell whether that run still holds the RayJob object
and must not repeat a finished RayJob's side effects (the workflow decides; this only observes). A new RayJob
run reads it together with the operator configuration (`read_run_start`).

The client is the worker's own (given to `ActivityDependencies` at worker construction); nothing secret
enters the result: run ids, states, the memo's outcome, generation and spec hash, and the final status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from temporalio.client import WorkflowExecution, WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from activities.config import read_operator_config
from models.naming import MEMO_GENERATION, MEMO_OUTCOME, MEMO_SPEC_HASH
from wire import stubs
from wire.kubernetes import EarlierRun, EarlierRuns, RunStart
from wire.stubs.common import implements

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

TEMPORAL_UNAVAILABLE: Final = "TemporalUnavailable"
# Runs of one id that are looked at: only the newest earlier one matters.
RUNS_LISTED: Final = 20


def newest_earlier_closed(
    executions: Sequence[WorkflowExecution], own_run_id: str
) -> WorkflowExecution | None:
    """The most recently started run other than `own_run_id` that is closed (visibility may still list
    another run as running for a moment; the newest closed one is what it left)."""
    closed = [
        execution
        for execution in executions
        if execution.run_id != own_run_id and execution.status not in (None, WorkflowExecutionStatus.RUNNING)
    ]
    return max(closed, key=lambda execution: execution.start_time, default=None)


def _text(memo: Mapping[str, Any], key: str) -> str | None:
    value = memo.get(key)
    return value if isinstance(value, str) else None


class TemporalRunActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @implements(stubs.latest_earlier_run)
    async def latest_earlier_run(self, request: EarlierRuns) -> EarlierRun | None:
        """The newest closed earlier run of the id, with its memo and (completed) result; None: none."""
        client = self.dependencies.require_temporal_client()
        query = f"WorkflowId = '{request.workflow_id}'"
        try:
            executions = [execution async for execution in client.list_workflows(query, limit=RUNS_LISTED)]
            earlier = newest_earlier_closed(executions, request.run_id)
            if earlier is None or earlier.status is None:
                return None
            memo = await earlier.memo()
            result: dict[str, Any] | None = None
            if earlier.status == WorkflowExecutionStatus.COMPLETED:
                handle = client.get_workflow_handle(request.workflow_id, run_id=earlier.run_id)
                result = await handle.result(follow_runs=False)
        except RPCError as error:
            raise ApplicationError(f"Temporal: {error.message}", type=TEMPORAL_UNAVAILABLE) from None
        generation = memo.get(MEMO_GENERATION)
        return EarlierRun(
            run_id=earlier.run_id,
            state=earlier.status.name,
            outcome=_text(memo, MEMO_OUTCOME),
            generation=generation if isinstance(generation, int) else 0,
            spec_hash=_text(memo, MEMO_SPEC_HASH) or "",
            result=result,
        )

    @implements(stubs.read_run_start)
    async def read_run_start(self, request: EarlierRuns) -> RunStart:
        """The operator configuration and the newest closed earlier run, together: a RayJob run needs both
        before its first act, and each local activity is a billable marker in its history (P4b). The two
        reads stay the single-purpose activities they are (the RayService reads the configuration alone);
        this one only runs both. Fails as `latest_earlier_run` does (Temporal unavailable): the workflow
        then reads the configuration alone and runs without knowing its earlier runs."""
        return RunStart(config=read_operator_config(), earlier=await self.latest_earlier_run(request))
