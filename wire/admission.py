"""What RayJob workflows, the admission workflow of a shared RayCluster and the admission activities exchange
(queueing on a shared cluster, `raypilot.io/max-concurrent-jobs`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

ADMISSION_WORKFLOW: Final = "RayClusterAdmissionWorkflow"
# Handlers of the admission workflow.
ENQUEUE_UPDATE: Final = "enqueue"
RELEASE_SIGNAL: Final = "release"
QUEUE_QUERY: Final = "queue"
# The signal a RayJob workflow gets when its place changes: its queue position, 0 once admitted.
ADMISSION_SIGNAL: Final = "admission"


def admission_workflow_id(namespace: str, cluster: str) -> str:
    return f"raycluster-admission/{namespace}/{cluster}"


@dataclass(frozen=True)
class AdmissionTicket:
    """A RayJob run holding or waiting for a slot."""

    workflow_id: str
    run_id: str


@dataclass(frozen=True)
class AdmissionRequest:
    """A RayJob run asks the cluster's admission workflow for a slot; `limit` is the cluster's annotation."""

    namespace: str
    cluster: str
    ticket: AdmissionTicket
    limit: int


@dataclass(frozen=True)
class AdmissionAnswer:
    """0: admitted; 1..: the place in the queue (1 = next)."""

    position: int


@dataclass(frozen=True)
class OpenRuns:
    """Which of these RayJob runs are still running (the admission workflow's liveness check)."""

    tickets: list[AdmissionTicket] = field(default_factory=list)
