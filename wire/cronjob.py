"""What the RayCronJob tick workflow and its activities exchange (pure dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CronJobKey:
    """A RayCronJob: its RayJobs carry the search attributes RayNamespace=<namespace>, RayCronJob=<name>."""

    namespace: str
    name: str


@dataclass(frozen=True)
class CronJobRun:
    """One RayJob a RayCronJob made, as Temporal lists its latest run: `state` is the name of
    WorkflowExecutionStatus; `status` the RayJob's final status when the run completed (else empty)."""

    workflow_id: str
    run_id: str
    name: str
    state: str
    status: dict[str, Any] | None = None


@dataclass(frozen=True)
class CronJobRuns:
    runs: tuple[CronJobRun, ...]


@dataclass(frozen=True)
class RayJobRunRef:
    """A RayJob by its workflow: delete it (the `delete` update while it runs; its leftovers and finished
    run otherwise)."""

    namespace: str
    name: str
    workflow_id: str
