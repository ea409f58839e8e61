"""The state of the RayJob fake world (`raypilot.testing.rayjob_world.FakeWorld`): its clusters, Services,
submitter Jobs, head Pods, Events and Ray jobs, how tests drive them, and how its waits wait for a change."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from models.naming import SUBMITTER_CONTAINER_NAME
from models.operator import OperatorConfig
from raypilot.testing.rayjob_fake_jobs import (
    SUCCEEDS,
    FakeRayJob,
    SubmitterOutcome,
    activity_now,
    container_env,
    iso_stamp,
)
from wire.dashboard import JobInfoAnswer
from wire.driver_log import SaveDriverLog
from wire.kubernetes import EarlierRun, RayResourceKey, RecordEvent


@dataclass
class FakeWorldState:
    """What the RayJob fake world holds and how tests drive it; `raypilot.testing.rayjob_world.FakeWorld`
    adds its activities."""

    config: OperatorConfig = field(default_factory=OperatorConfig)
    patience: float = 0.01
    clusters_become_ready: bool = True
    # One script per submitted Ray job, in submission order; the last one repeats.
    job_scripts: list[tuple[str, ...]] = field(default_factory=lambda: [SUCCEEDS])
    # Ray's error_type of a failed job, per submission like job_scripts (the last one repeats; none: "").
    job_error_types: list[str] = field(default_factory=list)
    # How long each Ray job stays RUNNING (workflow time).
    job_duration: timedelta = timedelta(0)
    submitter_outcome: SubmitterOutcome = "with_job"
    # The dashboard answers every job status request with an error.
    dashboard_unavailable: bool = False
    # RayClusters whose deletion a finalizer holds until `release_finalizer`.
    finalizers: set[str] = field(default_factory=set)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    head_pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    ray_jobs: dict[str, FakeRayJob] = field(default_factory=dict)
    events: list[RecordEvent] = field(default_factory=list)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    deleted_resources: list[RayResourceKey] = field(default_factory=list)
    # What Temporal's visibility shows as the newest earlier run of the workflow id.
    earlier_run: EarlierRun | None = None
    submissions: int = 0
    # Driver logs the dashboard answers (by submission id; a submitted job without one: a line naming it),
    # and the saves of dashboard.save_driver_log, in order.
    driver_logs: dict[str, str] = field(default_factory=dict)
    saved_driver_logs: list[SaveDriverLog] = field(default_factory=list)
    # The entrypoint and metadata the dashboard lists for a Ray job (by submission id; none: "" and none).
    job_entrypoints: dict[str, tuple[str, dict[str, str] | None]] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    # ---- driving the world ------------------------------------------------------------------------------

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def called(self, name: str) -> list[Any]:
        return [arg for called, arg in self.calls if called == name]

    def event_reasons(self) -> list[str]:
        return [event.reason for event in self.events]

    def make_ready(self, cluster_name: str) -> None:
        cluster = self.clusters[cluster_name]
        cluster["status"] = {
            "state": "ready",
            "head": {"serviceName": f"{cluster_name}-head-svc", "podIP": "10.0.0.1"},
            "endpoints": {"dashboard": "8265", "client": "10001"},
        }
        self._start_sidecar(cluster)
        self.notify()

    def release_finalizer(self, cluster_name: str) -> None:
        self.finalizers.discard(cluster_name)
        if self.clusters.get(cluster_name, {}).get("metadata", {}).get("deletionTimestamp"):
            del self.clusters[cluster_name]
        self.notify()

    def add_ray_job(self, submission_id: str, script: Sequence[str]) -> None:
        self.ray_jobs[submission_id] = FakeRayJob(submission_id, tuple(script), self.job_duration)
        self.notify()

    def _next_script(self) -> tuple[str, ...]:
        self.submissions += 1
        return self.job_scripts[min(self.submissions, len(self.job_scripts)) - 1]

    def _submit(self, submission_id: str) -> FakeRayJob:
        if submission_id not in self.ray_jobs:
            script = self._next_script()
            errors = self.job_error_types
            error_type = errors[min(self.submissions, len(errors)) - 1] if errors else ""
            self.ray_jobs[submission_id] = FakeRayJob(
                submission_id, script, self.job_duration, error_type=error_type
            )
            self.notify()
        return self.ray_jobs[submission_id]

    def _progress(self, job: FakeRayJob) -> None:
        """The job moves on if it may; the submitter finishes with it."""
        if job.progress(activity_now()):
            if job.terminal:
                self._finish_submitters(job.submission_id)
            self.notify()

    def _finish_submitters(self, submission_id: str) -> None:
        stamp = iso_stamp(activity_now())
        for submitter in self.jobs.values():
            if submitter["_submission_id"] == submission_id and self.submitter_outcome == "with_job":
                self.finish_submitter(submitter, "Complete")
        for pod in self.head_pods.values():
            if pod["_submission_id"] == submission_id:
                for container in pod["status"]["containerStatuses"]:
                    if container["name"] == SUBMITTER_CONTAINER_NAME:
                        container["state"] = {"terminated": {"exitCode": 0, "finishedAt": stamp}}

    def finish_submitter(self, submitter: dict[str, Any], condition: str) -> None:
        """The submitter Job ends with a `Complete` or `Failed` condition."""
        stamp = iso_stamp(activity_now())
        status: dict[str, Any] = {"succeeded": 1} if condition == "Complete" else {"failed": 3}
        status["conditions"] = [
            {
                "type": condition,
                "status": "True",
                "lastTransitionTime": stamp,
                "reason": "" if condition == "Complete" else "BackoffLimitExceeded",
                "message": "" if condition == "Complete" else "Job has reached the specified backoff limit",
            }
        ]
        submitter["status"] = status
        self.notify()

    def dashboard_answer(self, submission_id: str) -> JobInfoAnswer:
        if self.dashboard_unavailable:
            return JobInfoAnswer("unavailable", error="GetJobInfo fail: connection refused")
        job = self.ray_jobs.get(submission_id)
        return job.answer() if job is not None else JobInfoAnswer("not_found")

    def _start_sidecar(self, cluster: dict[str, Any]) -> None:
        containers = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
        sidecar = next((c for c in containers if c["name"] == SUBMITTER_CONTAINER_NAME), None)
        if sidecar is None:
            return
        submission_id = container_env(sidecar, "RAY_JOB_SUBMISSION_ID")
        name = cluster["metadata"]["name"]
        self.head_pods[name] = {
            "_submission_id": submission_id,
            "metadata": {"name": f"{name}-head", "uid": f"uid-{name}-head"},
            "spec": {"containers": [{"name": c["name"]} for c in containers]},
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {"name": c["name"], "state": {"running": {}}, "restartCount": 0} for c in containers
                ],
            },
        }
        self._submit(submission_id)

    async def _until(self, observe: Callable[[], Any]) -> Any:
        """`observe()` until it returns something; after `patience` seconds ask to be retried."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.patience
        while True:
            result = observe()
            if result is not None:
                return result
            remaining = give_up - loop.time()
            if remaining <= 0:
                raise ApplicationError("nothing changed yet", type="FakeNoChange")
            activity.heartbeat()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=min(remaining, 0.1))
