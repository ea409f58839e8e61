"""What every part of one RayService reconcile works on. The reconciler, its Serve handling and the
incremental upgrade share the workflow's state, its view of the world, the activity calls, the operator
config and `commit`."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class PassContext:
    """What a pass's parts share: the workflow's state, its view of the world, the calls, the config and
    `commit`."""

    state: RayServiceState
    world: RayServiceWorld
    calls: RayServiceCalls
    config: OperatorConfig
    commit: Commit


class RayServicePart:
    def __init__(self, context: PassContext) -> None:
        self.context = context
        self.state = context.state
        self.world = context.world
        self.calls = context.calls
        self.config = context.config
        self.commit = context.commit
