"""The fake RayService world with each cluster's Serve requests in flight, for drained deletion."""

from __future__ import annotations

from typing import Any

from temporalio import activity

from raypilot.testing.rayservice_world import FakeRayWorld
from wire import names
from wire.drain import ServeRequestsInFlight


class DrainingWorld(FakeRayWorld):
    """The fake world plus each cluster's Serve requests in flight, as the metrics activity reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight: dict[str, int | None] = {}
        self.reads: list[tuple[Any, str, int | None]] = []  # (time, cluster, answer)

    def activities(self) -> list[Any]:
        world = self

        @activity.defn(name=names.READ_SERVE_REQUESTS_IN_FLIGHT)
        async def read_serve_requests_in_flight(request: ServeRequestsInFlight) -> int | None:
            answer = world.in_flight.get(request.cluster_name, 0)
            world.reads.append((activity.info().current_attempt_scheduled_time, request.cluster_name, answer))
            return answer

        return [*super().activities(), read_serve_requests_in_flight]
