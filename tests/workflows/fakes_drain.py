"""The fake RayService world with each cluster's Serve requests in flight, for drained deletion."""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from raypilot.testing.rayservice_world import FakeRayWorld
from wire import names
from wire.drain import CloseServeConnections, ServeConnectionsClosing, ServeRequestsInFlight


class DrainingWorld(FakeRayWorld):
    """The fake world plus each cluster's Serve requests in flight, as the metrics activity reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight: dict[str, int | None] = {}
        self.reads: list[tuple[Any, str, int | None]] = []  # (time, cluster, answer)
        self.closings: list[tuple[Any, CloseServeConnections]] = []  # (time, request)
        self.closing_answer: ServeConnectionsClosing | None = ServeConnectionsClosing(1)  # None: it fails

    def activities(self) -> list[Any]:
        world = self

        @activity.defn(name=names.READ_SERVE_REQUESTS_IN_FLIGHT)
        async def read_serve_requests_in_flight(request: ServeRequestsInFlight) -> int | None:
            answer = world.in_flight.get(request.cluster_name, 0)
            world.reads.append((activity.info().current_attempt_scheduled_time, request.cluster_name, answer))
            return answer

        @activity.defn(name=names.CLOSE_SERVE_CONNECTIONS)
        async def close_serve_connections(request: CloseServeConnections) -> ServeConnectionsClosing:
            world.closings.append((activity.info().current_attempt_scheduled_time, request))
            if world.closing_answer is None:
                raise ApplicationError("no dashboard", non_retryable=True)
            return world.closing_answer

        return [*super().activities(), read_serve_requests_in_flight, close_serve_connections]
