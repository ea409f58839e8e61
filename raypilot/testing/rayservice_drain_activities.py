"""The fake activities of drained deletion (on by default) in the RayService fake world: each cluster's Serve
requests in flight (`world.in_flight`, none unless a test says otherwise) read by the drain's reading and its
wait, and the connection-closing job (`world.closing_answer`). Every reading and closing is logged with the
workflow time its attempt was scheduled at (`world.in_flight_reads`, `world.closings`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from raypilot.testing.rayservice_world_state import FakeRayWorldState
from wire import names
from wire.drain import (
    CloseServeConnections,
    ServeConnectionsClosing,
    ServeRequestsInFlight,
    WaitServeRequestsInFlight,
)
from wire.views import quiet_reads_after

# A retry may start a few ms before its delay: not a reason to wait a whole poll more.
EARLY = timedelta(milliseconds=100)


def fake_drain_activities(world: FakeRayWorldState) -> list[Any]:
    """The drain's activities, each registered under its real name (the wait only while
    `world.drain_wait_registered`)."""

    @activity.defn(name=names.READ_SERVE_REQUESTS_IN_FLIGHT)
    async def read_serve_requests_in_flight(request: ServeRequestsInFlight) -> int | None:
        answer = world.in_flight.get(request.cluster_name, 0)
        at = activity.info().current_attempt_scheduled_time
        world.in_flight_reads.append((at, request.cluster_name, answer))
        return answer

    @activity.defn(name=names.WAIT_SERVE_REQUESTS_IN_FLIGHT)
    async def wait_serve_requests_in_flight(request: WaitServeRequestsInFlight) -> int | None:
        """An attempt reads once `poll_seconds` passed since the cluster's last reading, as the real wait
        sleeps before each; otherwise, or when the reading changes nothing, it asks to be retried when the
        next reading is due (the retries are not in the history, and time skips to them)."""
        now = activity.info().current_attempt_scheduled_time
        poll = timedelta(seconds=request.poll_seconds)
        name = request.cluster_name
        last = max((at for at, read, _ in world.in_flight_reads if read == name), default=None)
        if last is None or now >= last + poll - EARLY:
            answer = world.in_flight.get(name, 0)
            world.in_flight_reads.append((now, name, answer))
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

    wait = [wait_serve_requests_in_flight] if world.drain_wait_registered else []
    return [read_serve_requests_in_flight, *wait, close_serve_connections]
