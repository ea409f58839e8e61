"""The Nexus service `raypilot` (docs/contract.md §9): Ray work as a step of any workflow, and what the
RayService workflow and the workflow waiting for one upgrade's outcome exchange.

The service definition is what a caller's workflow types its Nexus client with (`raypilot.steps` does);
the handlers live in `raypilot.nexus`. Both operations take the manifest users apply (`ray.io/v1`, as a JSON
object): `run_rayjob` answers the RayJob's final status (the `RayJobWorkflow`'s result), `upgrade_rayservice`
the outcome of the generation the manifest became (`UpgradeOutcome`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import nexusrpc

__all__ = [
    "NEXUS_SERVICE",
    "UPGRADE_OUTCOME_SIGNAL",
    "UPGRADE_OUTCOME_WORKFLOW",
    "WATCH_UPGRADE_SIGNAL",
    "RayPilotService",
    "UpgradeOutcome",
    "UpgradeResult",
    "UpgradeWatch",
    "UpgradeWatchRequest",
]

NEXUS_SERVICE: Final = "raypilot"
# The workflow that waits for one generation's outcome (id: models.naming.upgrade_outcome_workflow_id).
UPGRADE_OUTCOME_WORKFLOW: Final = "RayServiceUpgradeWorkflow"
# Signal to RayServiceWorkflow: tell this workflow the outcome of that generation (UpgradeWatch).
WATCH_UPGRADE_SIGNAL: Final = "watch_upgrade"
# Signal to RayServiceUpgradeWorkflow: the outcome (UpgradeOutcome).
UPGRADE_OUTCOME_SIGNAL: Final = "upgrade_outcome"


class UpgradeResult(StrEnum):
    """How one generation of a RayService ended."""

    PROMOTED = "promoted"  # a cluster running its spec serves all traffic
    ROLLED_BACK = "rolled-back"  # the `abort` control, or raypilot's own rollback (unhealthy, a gate...)
    FAILED = "failed"  # it never served: a newer spec came first, or the RayService was deleted


@dataclass(frozen=True)
class UpgradeOutcome:
    """The result of `upgrade_rayservice`: `result` (an UpgradeResult value) and why, for the RayService
    `namespace/name` at `generation` (its revision in `raypilot rollout history`, and the RayCluster that
    serves it when promoted)."""

    result: str
    reason: str
    namespace: str
    name: str
    generation: int
    revision: int = 0
    ray_cluster_name: str = ""

    @property
    def promoted(self) -> bool:
        return self.result == UpgradeResult.PROMOTED


@dataclass(frozen=True)
class UpgradeWatch:
    """`watch_upgrade`'s argument: signal `workflow_id` the outcome of `generation`."""

    generation: int
    workflow_id: str


@dataclass(frozen=True)
class UpgradeWatchRequest:
    """RayServiceUpgradeWorkflow's input: the RayService and the generation whose outcome it waits for."""

    namespace: str
    name: str
    generation: int


@nexusrpc.service(name=NEXUS_SERVICE)
class RayPilotService:
    """docs/contract.md §9: the operations other workflows call through a Nexus endpoint."""

    run_rayjob: nexusrpc.Operation[dict[str, Any], dict[str, Any]]
    upgrade_rayservice: nexusrpc.Operation[dict[str, Any], UpgradeOutcome]
