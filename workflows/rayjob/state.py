"""Everything a RayJobWorkflow knows, in one place: the RayJob (desired spec and the status the workflow
writes), what the current attempt created and observed, the handlers' requests and the recent Events.

A RayJob's history stays small (a handful of events per state change), so the workflow never continues as
new and this state lives only in the running workflow.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.base import format_rfc3339
    from models.operator import OperatorConfig
    from models.raycluster import RayClusterSpec
    from models.rayjob import RayJob
    from models.source import AdoptedRayJob
    from wire.dashboard import JobInfoAnswer
    from wire.kubernetes_observer import ObservedObject
    from wire.notify import NotifyBook
    from wire.observer import ObservedJob
    from workflows.decisions.rayjob.deletion import ClusterDeletionObservation
    from workflows.decisions.rayjob.events import (
        EVENT_LOG_SIZE,
        RayJobEvent,
    )
    from workflows.decisions.rayjob.observations import SubmitterState
    from workflows.decisions.rayjob.retry_policy import RetryPlan, RetryPolicy


@dataclass
class AttemptState:
    """One attempt (New -> ... -> Complete/Failed/Retrying/Suspended): what it created and last saw.

    `cluster_spec` is the spec of the RayCluster this attempt runs on: the RayJob's rayClusterSpec when the
    attempt created it (later spec changes are disregarded, as in KubeRay), the selected cluster's own spec in
    clusterSelector mode.
    """

    cluster_spec: RayClusterSpec | None = None
    cluster_created: bool = False
    head_service_created: bool = False
    submitter_created: bool = False
    submitter_view: dict[str, Any] | None = None
    head_pod_view: dict[str, Any] | None = None
    submitter: SubmitterState | None = None
    job_answer: JobInfoAnswer | None = None
    # The version of the newest observer view `job_answer` accounts for: the
    # view it came from, or the view held when a direct look answered. Only a later view is news.
    answer_covers: tuple[int, int, int] | None = None
    submitted: bool = False
    # The submission id this attempt registered with its cluster's observer ("" none yet).
    observer_watch: str = ""
    # When the workflow registers again and looks at the job itself if nothing woke it before.
    observer_check_at: datetime | None = None
    # The worker could not register with an observer (no Temporal client): this attempt polls its job.
    observer_missing: bool = False
    # Kubernetes observer: the objects (wire.kubernetes_observer.object_key) this
    # attempt registered for, the last view of each a wait returned, when it registers again (a lost
    # observer is restarted), and whether the worker could not register (then the wait activities).
    k8s_registered: list[str] = field(default_factory=list)
    k8s_consumed: dict[str, dict[str, Any]] = field(default_factory=dict)
    k8s_check_at: datetime | None = None
    k8s_observer_missing: bool = False
    # Suspending / Retrying: deletions asked for, and the objects' last views until they are gone.
    cluster_deletion_requested: bool = False
    submitter_deletion_requested: bool = False
    cluster_view: dict[str, Any] | None = None
    submitter_job_view: dict[str, Any] | None = None
    # Queueing on a shared cluster: the selected cluster's raypilot.io/max-concurrent-jobs, and whether this
    # attempt asked its admission workflow for a slot.
    admission_limit: int | None = None
    enqueued: bool = False
    # Adopted in HTTPMode: KubeRay's submission is looked up on the dashboard first.
    finds_submission: bool = False


@dataclass(frozen=True)
class EventRecord:
    """An Event as the `events` query shows it (time: workflow time)."""

    time: datetime
    type: str
    reason: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {
            "time": format_rfc3339(self.time),
            "type": self.type,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass
class RayJobState:
    job: RayJob
    workflow_id: str
    config: OperatorConfig | None = None
    generation: int = 1
    # Bumped by every accepted `apply`, so the main loop notices a new desired state.
    spec_version: int = 0
    delete_requested: bool = False
    deleted: bool = False
    finished: bool = False
    # The spec hash of the finished RayJob this run took over from an earlier run ("" when it ran itself).
    spec_hash: str = ""
    attempt: AttemptState = field(default_factory=AttemptState)
    # The RayCluster as the deletion rules judge it, once read in Complete/Failed.
    cluster_for_deletion: ClusterDeletionObservation | None = None
    consecutive_failures: int = 0
    # Job observer (RAYPILOT_JOB_OBSERVER): the Ray job's status arrives by the `observed` signal; the newest
    # view of the current job id is kept here. It replaces the job's answer only when it is newer than what
    # the answer accounts for, direct looks included (`wire.observer.takes_observed_view`).
    observes: bool = False
    observed: ObservedJob | None = None
    # Kubernetes observer (RAYPILOT_JOB_OBSERVER): the RayCluster in
    # Initializing and the submitter Job / head Pod while running arrive by the `k8s_observed` signal; the
    # newest view of each object (by object key) is kept here.
    k8s_observes: bool = False
    k8s_views: dict[str, ObservedObject] = field(default_factory=dict)
    events: deque[EventRecord] = field(default_factory=lambda: deque(maxlen=EVENT_LOG_SIZE))
    event_sequence: int = 0
    # raypilot.io/notify: the notifications made so far and those not yet sent.
    notify: NotifyBook = field(default_factory=NotifyBook)
    published_phase: str | None = None
    # For a raypilot.io object: jobStatus goes to the memo on each change.
    publishes_job_status: bool = False
    published_job_status: str = ""
    # No silent leaks: whether this run has reported a RayCluster its deletion policy leaves behind.
    leftover_reported: bool = False
    # Retries that fit the failure: the raypilot.io/retry-policy annotation, the
    # plan for the last failed attempt, and when the next attempt may start (its back-off).
    retry_policy: RetryPolicy | None = None
    retry_plan: RetryPlan | None = None
    retry_at: datetime | None = None
    # Queueing on a shared cluster: whether this run holds a slot or a place in the queue, and its place (0:
    # admitted).
    holds_admission: bool = False
    queue_position: int | None = None
    # Logs after teardown: the submission id of a failed attempt whose driver log is to be saved before
    # anything is deleted ("" none; workflows/rayjob/driver_log.py).
    driver_log_due: str = ""
    # Adopted from KubeRay: what the first attempt continues from; consumed by it.
    adoption: AdoptedRayJob | None = None

    def remember_event(self, event: RayJobEvent, now: datetime) -> int:
        """Keeps the event for the `events` query; returns its sequence number (part of its Kubernetes
        name, so a retried recording finds the Event instead of adding a second one)."""
        self.event_sequence += 1
        self.keep_event(event, now)
        return self.event_sequence

    def keep_event(self, event: RayJobEvent, now: datetime) -> None:
        """Keeps for the `events` query an event numbered already (`event_sequence`): one an act posted."""
        self.events.append(EventRecord(now, event.type, event.reason.value, event.message))
