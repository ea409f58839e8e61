"""What every part of one RayService reconcile works on. The reconciler, its Serve handling and the
incremental upgrade share the workflow's state, its view of the world, the activity calls, the operator
config and `commit`."""

from __future__ import annotations

from typing import Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.operator import OperatorConfig
    from models.rayservice import RayServiceStatuses
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.rayservice.calls import RayServiceCalls
    from workflows.rayservice.state import RayServiceState
    from workflows.rayservice.world import RayServiceWorld


class Commit(Protocol):
    """Persists the status, records the events, upserts the phase and shows `upgrade_line` in the Web UI."""

    async def __call__(
        self, status: RayServiceStatuses, events: list[RayServiceEvent], upgrade_line: str = ""
    ) -> None: ...


class RayServicePart:
    def __init__(
        self,
        state: RayServiceState,
        world: RayServiceWorld,
        calls: RayServiceCalls,
        config: OperatorConfig,
        commit: Commit,
    ) -> None:
        self.state = state
        self.world = world
        self.calls = calls
        self.config = config
        self.commit = commit
