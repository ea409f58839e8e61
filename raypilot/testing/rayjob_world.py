"""Fake activities for RayJobWorkflow tests, registered under the real activity names: an in-memory cluster
(RayClusters, Services, submitter Jobs, head Pods, Events), a Ray dashboard whose jobs follow a script, and
the submitter (a K8sJobMode Job or SidecarMode container) that submits the job and finishes with it.

Waits return on change like the real ones. When nothing changes for `patience` real seconds they fail with a
retryable error, so the workflow's retry policy schedules them again: while a wait is between attempts the
time-skipping test server can jump to the workflow's next timer (it never skips while an activity runs).
Tests that drive the world by hand with time skipping off use a long patience instead.

The world's Ray jobs are in `raypilot.testing.rayjob_fake_jobs`, its activities in
`raypilot.testing.rayjob_activities`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raypilot.testing.rayjob_activities import FakeActivities
from raypilot.testing.rayjob_fake_jobs import (
    FAILS,
    RUNS_FOREVER,
    SUCCEEDS,
    TERMINAL,
    FakeRayJob,
    SubmitterOutcome,
)
from raypilot.testing.rayjob_world_state import FakeWorldState

__all__ = [
    "FAILS",
    "RUNS_FOREVER",
    "SUCCEEDS",
    "TERMINAL",
    "FakeActivities",
    "FakeRayJob",
    "FakeWorld",
    "SubmitterOutcome",
]


class FakeWorld(FakeWorldState):
    """An in-memory cluster and Ray dashboard (`FakeWorldState`) with its fake activities."""

    def activities(self) -> list[Callable[..., Any]]:
        return FakeActivities(self).all()
