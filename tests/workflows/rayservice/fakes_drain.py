"""The fake RayService world with each cluster's Serve requests in flight, for drained deletion."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from raypilot.testing.rayservice_world import FakeRayWorld
from wire import names
from wire.drain import (
    CloseServeConnections,
    ServeConnectionsClosing,
    ServeRequestsInFlight,
    WaitServeRequestsInFlight,
)
from wire.views import quiet_reads_after

EARLY = timedelta(milliseconds=100)


class DrainingWorld(FakeRayWorld):
    """The fake world plus each cluster's Serve requests in flight, as the metrics activity reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight: dict[str, int | None] = {}
        self.reads: list[tuple[Any, str, int | None]] = []  # (time, cluster, answer)
        self.closings: list[tuple[Any, CloseServeConnections]] = []  # (time, request)
        self.closing_answer: ServeConnectionsClosing | None = ServeConnectionsClosing(1)  # None: it fails
        # False: no worker runs the drain wait (a worker of a release before it), which then fails.
        self.drain_wait_registered = True

    def activities(self) -> list[Any]:
        world = self

        @activity.defn(name=names.READ_SERVE_REQUESTS_IN_FLIGHT)
        async def read_serve_requests_in_flight(request: ServeRequestsInFlight) -> int | None:
            answer = world.in_flight.get(request.cluster_name, 0)
            world.reads.append((activity.info().current_attempt_scheduled_time, request.cluster_name, answer))
            return answer

        @activity.defn(name=names.WAIT_SERVE_REQUESTS_IN_FLIGHT)
        async def wait_serve_requests_in_flight(request: WaitServeRequestsInFlight) -> int | None:
            """An attempt reads once `poll_seconds` passed since the cluster's last reading, as the real wait
            sleeps before each; otherwise, or when the reading changes nothing, it asks to be retried when
            the next reading is due (the retries are not in the history, and time skips to them)."""
            now = activity.info().current_attempt_scheduled_time
            poll = timedelta(seconds=request.poll_seconds)
            last = max((at for at, name, _ in world.reads if name == request.cluster_name), default=None)
            # (A retry may start a few ms before its delay: not a reason to wait a whole poll more.)
            if last is None or now >= last + poll - EARLY:
                answer = world.in_flight.get(request.cluster_name, 0)
                world.reads.append((now, request.cluster_name, answer))
                if quiet_reads_after(request.quiet_reads, answer) != request.quiet_reads:
                    return answer
                last = now
            raise ApplicationError(
                "nothing changed yet",
                type="Unchanged",
                next_retry_delay=last + poll - now,
                category=ApplicationErrorCategory.BENIGN,
            )

        @activity.defn(name=names.CLOSE_SERVE_CONNECTIONS)
        async def close_serve_connections(request: CloseServeConnections) -> ServeConnectionsClosing:
            world.closings.append((activity.info().current_attempt_scheduled_time, request))
            if world.closing_answer is None:
                raise ApplicationError("no dashboard", non_retryable=True)
            return world.closing_answer

        drain_wait = [wait_serve_requests_in_flight] if self.drain_wait_registered else []
        return [*super().activities(), read_serve_requests_in_flight, *drain_wait, close_serve_connections]
