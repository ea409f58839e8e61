"""RayServiceUpgradeWorkflow: waits for the outcome of one generation of a RayService and returns it (id
`rayservice-upgrade/<namespace>/<name>/<generation>`, docs/contract.md §9). It backs the Nexus operation
`upgrade_rayservice`, whose caller is answered when this workflow completes: a RayService's own workflow runs
until the RayService is deleted, so it cannot be the one whose completion answers.

It asks the RayService's workflow with the `watch_upgrade` signal and waits for the `upgrade_outcome` signal
back (workflows/rayservice/upgrade_watchers.py): two events to ask, none while it waits, one for the answer.
When no workflow runs the RayService, the outcome is `failed` at once.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    import wire.nexus  # noqa: F401
    from models.naming import KIND_RAYSERVICE, workflow_id
    from wire.nexus import (
        UPGRADE_OUTCOME_SIGNAL,
        UPGRADE_OUTCOME_WORKFLOW,
        WATCH_UPGRADE_SIGNAL,
        UpgradeOutcome,
        UpgradeResult,
        UpgradeWatch,
        UpgradeWatchRequest,
    )
    from workflows.decisions.rayservice.upgrade.outcome import REASON_NOT_RUNNING

__all__ = ["RayServiceUpgradeWorkflow"]


@workflow.defn(name=UPGRADE_OUTCOME_WORKFLOW)
class RayServiceUpgradeWorkflow:
    def __init__(self) -> None:
        self._outcome: UpgradeOutcome | None = None

    @workflow.run
    async def run(self, request: UpgradeWatchRequest) -> UpgradeOutcome:
        target = workflow_id(KIND_RAYSERVICE, request.namespace, request.name)
        watch = UpgradeWatch(request.generation, workflow.info().workflow_id)
        try:
            await workflow.get_external_workflow_handle(target).signal(WATCH_UPGRADE_SIGNAL, watch)
        except FailureError:
            return UpgradeOutcome(
                UpgradeResult.FAILED.value,
                REASON_NOT_RUNNING,
                request.namespace,
                request.name,
                request.generation,
            )
        await workflow.wait_condition(lambda: self._outcome is not None)
        assert self._outcome is not None
        return self._outcome

    @workflow.signal(name=UPGRADE_OUTCOME_SIGNAL)
    def upgrade_outcome(self, outcome: UpgradeOutcome) -> None:
        if self._outcome is None:  # the first answer: a repeated one (a retried pass) says the same
            self._outcome = outcome

    @workflow.query(name="status")
    def status(self) -> dict[str, object]:
        """The outcome once known (`{}` while waiting)."""
        if self._outcome is None:
            return {}
        return {"result": self._outcome.result, "reason": self._outcome.reason}
