"""The fake Ray dashboard's jobs of the RayJob fake world (`raypilot.testing.rayjob_world`): each follows a
script of statuses, moving on once a wait has seen its current step; and the workflow-side clock that the
fake world and its activities read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from temporalio import activity

from wire.dashboard import JobInfoAnswer

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
SUCCEEDS: tuple[str, ...] = ("PENDING", "RUNNING", "SUCCEEDED")
FAILS: tuple[str, ...] = ("PENDING", "RUNNING", "FAILED")
RUNS_FOREVER: tuple[str, ...] = ("PENDING", "RUNNING")
# How the K8sJobMode submitter behaves: finishes when its Ray job ends (as `ray job logs --follow` does),
# never finishes, finishes at once (without waiting for the job), or fails without submitting.
SubmitterOutcome = Literal["with_job", "never", "immediately", "fails"]


def activity_now() -> datetime:
    """The workflow-side time of the running activity (the test server's clock under time skipping)."""
    try:
        return activity.info().current_attempt_scheduled_time
    except RuntimeError:
        return datetime.now(UTC)


def iso_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class FakeRayJob:
    """A Ray job on the fake dashboard: it shows `script[index]` and moves one step on once a wait has seen
    the current step, except that it stays RUNNING for `duration`; it stays on its last step."""

    submission_id: str
    script: tuple[str, ...]
    duration: timedelta = timedelta(0)
    index: int = 0
    observed: int = -1
    running_since: datetime | None = None
    start_ms: int = 0
    end_ms: int = 0
    stopped: bool = False
    # Ray's error_type once the job FAILED (JobDetails), e.g. RUNTIME_ENV_SETUP_FAILURE.
    error_type: str = ""

    def progress(self, now: datetime) -> bool:
        """Moves on if the current step was seen and is not held; True when it moved."""
        if self.stopped or self.index >= len(self.script) - 1 or self.observed < self.index:
            return False
        if self.running_since is not None and now < self.running_since + self.duration:
            return False
        self.index += 1
        now_ms = int(now.timestamp() * 1000)
        if self.status == "RUNNING":
            self.running_since = now
            self.start_ms = now_ms
        if self.terminal:
            self.start_ms = self.start_ms or now_ms
            self.end_ms = now_ms
        return True

    @property
    def status(self) -> str:
        return "STOPPED" if self.stopped else self.script[self.index]

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def answer(self) -> JobInfoAnswer:
        return JobInfoAnswer(
            "found",
            status=self.status,
            message=f"Job is {self.status.lower()}",
            start_time_ms=self.start_ms,
            end_time_ms=self.end_ms,
            error_type=self.error_type if self.status == "FAILED" else "",
        )


def container_env(container: dict[str, Any], name: str) -> str:
    """The value of environment variable `name` in a Pod template's container ("" when unset)."""
    return next((var.get("value", "") for var in container.get("env") or [] if var["name"] == name), "")
