"""An in-memory Kubernetes + Ray Serve + Gateway world behind fake activities registered under the real
activity names, for time-skipping tests of RayServiceWorkflow.

The world reacts at once to what the workflow does (a created cluster's head is ready, a PUT config runs
its applications with their replicas) unless a test says otherwise. Waits compare with the workflow's last
view: a difference returns at once; no difference raises a benign retryable error with `next_retry_delay`
(`FakeRayWorld.unchanged_retry`), so between attempts no activity is in flight and the test server can skip
time, while history grows by nothing (retries are not recorded), just as with the real long waits.

Every act is logged with the workflow time its attempt was scheduled at (`FakeRayWorld.log`). The world's
clusters are in `raypilot.testing.rayservice_cluster`, its activities in
`raypilot.testing.rayservice_activities` and (the old cluster's drain, on by default: no request in flight
unless a test sets `world.in_flight`) `raypilot.testing.rayservice_drain_activities`.
"""

from __future__ import annotations

from typing import Any

from raypilot.testing.rayservice_activities import fake_rayservice_activities
from raypilot.testing.rayservice_cluster import FakeCluster, LoggedAct
from raypilot.testing.rayservice_drain_activities import fake_drain_activities
from raypilot.testing.rayservice_shared_routes import fake_shared_route_activities
from raypilot.testing.rayservice_world_state import FakeRayWorldState, Unchanged

__all__ = ["FakeCluster", "FakeRayWorld", "LoggedAct", "Unchanged"]


class FakeRayWorld(FakeRayWorldState):
    """An in-memory Kubernetes, Ray Serve and Gateway (`FakeRayWorldState`) with its fake activities."""

    def activities(self) -> list[Any]:
        return [
            *fake_rayservice_activities(self),
            *fake_drain_activities(self),
            *fake_shared_route_activities(self),
        ]
