"""Queueing on a shared cluster (kuberay#2646, ray#60159): which clusterSelector RayJobs may run on a
RayCluster annotated `raypilot.io/max-concurrent-jobs: N`, and in which order the others wait.

One admission workflow per RayCluster keeps an `Admission`: the RayJobs holding a slot and a FIFO queue of
those waiting. A RayJob asks for a slot (`enqueue`), gives it back when its attempt ends or it is deleted
(`release`), and a holder whose workflow is gone is released the same way. Each change says who is admitted
now and which waiting RayJobs moved in the queue, so the workflow tells only those.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

__all__ = [
    "MAX_CONCURRENT_JOBS_ANNOTATION",
    "Admission",
    "AdmissionChange",
    "Ticket",
    "enqueue",
    "max_concurrent_jobs",
    "queue_positions",
    "release",
]

MAX_CONCURRENT_JOBS_ANNOTATION: Final = "raypilot.io/max-concurrent-jobs"


@dataclass(frozen=True)
class Ticket:
    """One RayJob run asking for a slot: its workflow id and run id (a later run of the same id is another
    RayJob instance)."""

    workflow_id: str
    run_id: str


@dataclass(frozen=True)
class Admission:
    limit: int
    holders: tuple[Ticket, ...] = ()
    queue: tuple[Ticket, ...] = ()

    @property
    def idle(self) -> bool:
        return not self.holders and not self.queue

    def position(self, ticket: Ticket) -> int:
        """0 while holding a slot, 1.. while waiting (1 = next), -1 when unknown."""
        if ticket in self.holders:
            return 0
        return self.queue.index(ticket) + 1 if ticket in self.queue else -1


@dataclass(frozen=True)
class AdmissionChange:
    """The admission after a change, who was admitted by it, and the new positions of the waiting RayJobs
    whose position changed."""

    admission: Admission
    admitted: tuple[Ticket, ...] = ()
    moved: dict[Ticket, int] = field(default_factory=dict)


def max_concurrent_jobs(annotations: dict[str, str]) -> int | None:
    """The RayCluster's limit; None when absent or not a positive integer (no queueing, as in KubeRay)."""
    text = annotations.get(MAX_CONCURRENT_JOBS_ANNOTATION)
    if text is None or not text.strip().isdigit():
        return None
    limit = int(text.strip())
    return limit if limit > 0 else None


def queue_positions(admission: Admission) -> dict[Ticket, int]:
    return {ticket: index + 1 for index, ticket in enumerate(admission.queue)}


def _admit_waiting(admission: Admission, before: Admission) -> AdmissionChange:
    free = max(admission.limit - len(admission.holders), 0)
    admitted = admission.queue[:free]
    settled = replace(admission, holders=admission.holders + admitted, queue=admission.queue[len(admitted) :])
    old = queue_positions(before)
    moved = {
        ticket: position
        for ticket, position in queue_positions(settled).items()
        if old.get(ticket) not in (None, position)
    }
    return AdmissionChange(settled, admitted, moved)


def enqueue(admission: Admission, ticket: Ticket, limit: int) -> AdmissionChange:
    """A RayJob asks for a slot (again: answered from where it is). `limit` is the cluster's annotation as
    the RayJob read it; the newest one counts, and a raised limit admits waiting RayJobs at once."""
    resized = replace(admission, limit=limit)
    if ticket in admission.holders or ticket in admission.queue:
        return _admit_waiting(resized, admission)
    # An earlier run of the same RayJob id is gone for good: its place is not kept.
    others = Admission(
        limit,
        tuple(held for held in admission.holders if held.workflow_id != ticket.workflow_id),
        tuple(queued for queued in admission.queue if queued.workflow_id != ticket.workflow_id),
    )
    change = _admit_waiting(replace(others, queue=(*others.queue, ticket)), admission)
    return change


def release(admission: Admission, ticket: Ticket) -> AdmissionChange:
    """A RayJob gives its slot back or leaves the queue (finished, suspended, retrying, deleted, or its
    workflow is gone); the next in line take the free slots."""
    remaining = replace(
        admission,
        holders=tuple(held for held in admission.holders if held != ticket),
        queue=tuple(queued for queued in admission.queue if queued != ticket),
    )
    return _admit_waiting(remaining, admission)
