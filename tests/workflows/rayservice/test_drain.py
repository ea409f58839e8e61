"""Drained deletion of the old cluster (kuberay#3602) on the time-skipping server: after a blue-green switch
the old cluster is kept for rayClusterDeletionDelaySeconds as in KubeRay, then until its Serve proxies report
no request in flight three times in a row, or until the maximum drain time (raypilot.io/max-drain-seconds, a
minute without it; "0" is KubeRay's deletion at the delay).

When things happen is read from the workflow's history: the workflow time of the task that decided each act
(its `workflow.now()`) and the durable timers it set. The test server's clock runs on while a task is in
flight, so the wall-clock gap between two acts also holds the machine's delays; the decisions do not."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_scenarios import (
    Handle,
    eventually,
    rayservice_manifest,
    running_rayservice,
    status_of,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import apply, cluster_deleted, ready_cluster
from tests.workflows.timer_dues import acts_with_decision_times, timer_dues
from wire import names
from wire.drain import ServeConnectionsClosing
from workflows.decisions.rayservice.drain import (
    DEFAULT_MAX_DRAIN,
    DRAIN_POLL,
    MAX_DRAIN_ANNOTATION,
    QUIET_READS_NEEDED,
)
from workflows.rayservice.drain import CLOSING_MARGIN

DELAY_S = 30


def manifest(version: str, max_drain_s: int | None) -> dict[str, Any]:
    """The RayService at `version`, with `max_drain_s` as its annotation (None: without it)."""
    annotations = {MAX_DRAIN_ANNOTATION: str(max_drain_s)} if max_drain_s is not None else None
    return rayservice_manifest(version=version, deletion_delay=DELAY_S, annotations=annotations)


@asynccontextmanager
async def switched_to_v2(
    env: WorkflowEnvironment, world: FakeRayWorld, max_drain_s: int | None
) -> AsyncIterator[tuple[Handle, str]]:
    """Runs v1, applies v2 (both with `max_drain_s`) and waits until the new cluster is active: (handle, the
    old cluster)."""
    async with running_rayservice(env, world, manifest("v1", max_drain_s)) as handle:
        old = str(await ready_cluster(env, handle))
        await apply(handle, manifest("v2", max_drain_s))

        async def switched() -> bool:
            status = await status_of(handle)
            return status["activeServiceStatus"]["rayClusterName"] != old

        await eventually(env, switched, step=timedelta(seconds=1))
        yield handle, old


# A timer's due instant is its task's start plus its duration: the instant decided, up to rounding.
ROUNDING = timedelta(milliseconds=2)


@dataclass(frozen=True)
class DrainTimes:
    """When the workflow decided each act of an old cluster's drain (workflow time), and its timers' dues.

    A pass measures from its own start (`now`), which lies between the acts the history shows: the delay
    runs from a pass at or after the switch, and the drain starts in the pass the delay's timer woke, at or
    before its first reading. So a timer is looked for in the window those acts give."""

    switched: datetime  # the last Service update: the traffic moved to the new cluster
    first_read: datetime  # the drain's first reading of the requests in flight (the deletion without one)
    closing: datetime | None  # the proxies told to close kept-alive connections
    deleted: datetime
    timers: list[datetime]

    def timers_due_within(self, earliest: datetime, latest: datetime) -> list[datetime]:
        return [due for due in self.timers if earliest - ROUNDING <= due <= latest + ROUNDING]

    def delay_end(self) -> datetime:
        """The due instant of the deletion delay's timer, which woke the drain (KubeRay's delay kept)."""
        earliest = self.switched + timedelta(seconds=DELAY_S)
        assert self.first_read >= earliest, self
        dues = self.timers_due_within(earliest, self.first_read)
        assert dues, f"no timer for the end of the deletion delay: {self}"
        return dues[0]

    def assert_held_until_deadline(self, max_drain: timedelta) -> None:
        """Deleted no earlier than the drain's maximum after it began, with a durable timer for it."""
        delay_end = self.delay_end()
        assert self.deleted >= delay_end + max_drain, self
        due = self.timers_due_within(delay_end + max_drain, self.first_read + max_drain)
        assert due, f"no timer for the drain's deadline: {self}"


async def drain_times(handle: Handle, old: str) -> DrainTimes:
    history = await handle.fetch_history()

    def decided(activity: str, name_field: str | None = None) -> list[datetime]:
        return [
            at
            for at, request in acts_with_decision_times(history, activity)
            if name_field is None or request[name_field] == old
        ]

    reads = decided(names.READ_SERVE_REQUESTS_IN_FLIGHT, "cluster_name")
    [deleted] = decided(names.DELETE_RAYCLUSTER, "name")
    closings = decided(names.CLOSE_SERVE_CONNECTIONS)
    return DrainTimes(
        switched=max(decided(names.UPDATE_SERVICE_SPEC)),
        first_read=min(reads, default=deleted),
        closing=min(closings, default=None),
        deleted=deleted,
        timers=timer_dues(history),
    )


def read_times(world: FakeRayWorld, cluster: str, times: int) -> Callable[[], Awaitable[bool]]:
    """A probe: `cluster`'s in-flight requests were read at least `times` times."""

    async def probe() -> bool:
        return len([read for read in world.in_flight_reads if read[1] == cluster]) >= times

    return probe


async def drain_after_reads(env: WorkflowEnvironment, world: FakeRayWorld, old: str, reads: int) -> None:
    """Keeps one request in flight on `old` until its drain has read it `reads` times, then none; returns once
    `old` is deleted."""
    world.in_flight[old] = 1
    await eventually(env, read_times(world, old, reads), step=DRAIN_POLL)
    world.in_flight[old] = 0
    await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)


async def test_old_cluster_with_requests_in_flight_is_deleted_once_drained(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, 600) as (handle, old):
        world.in_flight[old] = 3  # a long request still being answered by the old cluster

        await eventually(env, read_times(world, old, 5), step=DRAIN_POLL)
        assert old in world.clusters  # past the delay, but not drained
        world.in_flight[old] = 0

        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        times = await drain_times(handle, old)
    reads = [at for at, name, _ in world.in_flight_reads if name == old]
    answers = [answer for _, name, answer in world.in_flight_reads if name == old]
    # The first reading comes when the deletion delay ends (KubeRay's semantics kept), then one per poll.
    times.delay_end()
    # (Activity schedule times trail the workflow time of their pass by the task's processing time.)
    slack = timedelta(milliseconds=500)
    assert all(later - earlier >= DRAIN_POLL - slack for earlier, later in itertools.pairwise(reads)), reads
    # Deleted at the third zero reading in a row (12 s of zeros; Ray exports the gauge every 10 s).
    assert answers[-QUIET_READS_NEEDED:] == [0] * QUIET_READS_NEEDED
    assert 0 not in answers[:-QUIET_READS_NEEDED]
    assert times.deleted >= reads[-1]


async def test_old_cluster_is_deleted_after_the_maximum_drain_time_when_requests_never_end(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, 60) as (handle, old):
        world.in_flight[old] = 1  # a client that never stops (or a request that never ends)

        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        times = await drain_times(handle, old)
    times.assert_held_until_deadline(timedelta(seconds=60))


async def test_unknown_in_flight_counts_are_not_drained(time_skipping_env: WorkflowEnvironment) -> None:
    """No proxy answered (None): the cluster is kept until the maximum drain time, not deleted at once."""
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, 40) as (handle, old):
        world.in_flight[old] = None

        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        times = await drain_times(handle, old)
    assert times.deleted - times.switched >= timedelta(seconds=DELAY_S + 40)


async def test_without_the_annotation_the_old_cluster_drains_for_at_most_the_default_time(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """Draining is the default (KubeRay loses the requests of kept-alive clients at the deletion): read from
    the delay on, the proxies told to close kept-alive connections, deleted at the default maximum."""
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, None) as (handle, old):
        world.in_flight[old] = 5  # requests that never end

        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        times = await drain_times(handle, old)
    times.delay_end()
    [(_, closing)] = world.closings
    assert closing.seconds == (DEFAULT_MAX_DRAIN + CLOSING_MARGIN).total_seconds()
    times.assert_held_until_deadline(DEFAULT_MAX_DRAIN)


async def test_without_the_annotation_a_drained_old_cluster_goes_after_three_zero_readings(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()  # no request in flight
    async with switched_to_v2(env, world, None) as (handle, old):
        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        times = await drain_times(handle, old)
    reads = [(at, answer) for at, name, answer in world.in_flight_reads if name == old]
    assert [answer for _, answer in reads] == [0] * QUIET_READS_NEEDED
    # After the third zero reading (the fake's readings are DRAIN_POLL apart, give or take its EARLY), not
    # held to the drain's deadline.
    assert reads[-1][0] <= times.deleted < times.first_read + DEFAULT_MAX_DRAIN


async def test_zero_restores_kuberays_deletion_at_the_delay_with_nothing_read(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, 0) as (handle, old):
        world.in_flight[old] = 5

        await eventually(env, cluster_deleted(world, old), step=timedelta(seconds=5))
        times = await drain_times(handle, old)
    assert world.in_flight_reads == []
    assert world.closings == []
    delay_end = times.delay_end()  # the deletion's own: nothing was read
    assert times.deleted < delay_end + DEFAULT_MAX_DRAIN


async def test_a_drain_starts_with_the_old_proxies_closing_kept_alive_connections(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """Once per old cluster, when its drain starts (before its first reading), for the maximum drain time
    and a margin; a second apply does not ask again for the cluster already draining."""
    env, world = time_skipping_env, FakeRayWorld()
    world.closing_answer = ServeConnectionsClosing(2)
    async with switched_to_v2(env, world, 90) as (handle, old):
        await drain_after_reads(env, world, old, 2)
        times = await drain_times(handle, old)
    [(_, request)] = world.closings
    assert request.target.head_service == f"{old}-head-svc"
    assert request.submission_id == f"raypilot-close-connections-{old}"
    assert request.seconds == (timedelta(seconds=90) + CLOSING_MARGIN).total_seconds()
    assert times.closing is not None
    assert times.switched + timedelta(seconds=DELAY_S) <= times.closing <= times.first_read


async def test_a_failed_closing_does_not_stop_the_drain(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    world.closing_answer = None  # the job could not run: the drain goes on as without it
    async with switched_to_v2(env, world, 60) as (handle, old):
        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        times = await drain_times(handle, old)
    assert len(world.closings) == 1
    # Three zero readings DRAIN_POLL apart, as without the closing: not held to the drain's deadline.
    answers = [answer for _, name, answer in world.in_flight_reads if name == old]
    assert answers == [0] * QUIET_READS_NEEDED
    assert times.deleted < times.first_read + timedelta(seconds=60)


async def history_length(handle: Any) -> int:
    return len((await handle.fetch_history()).events)


async def test_a_drain_writes_no_history_while_requests_stay_in_flight(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """Patch rayservice-waits-not-polls: the old cluster's readings come from a drain wait that returns only
    a reading that changes the count of zeros, not from a timer and a read every DRAIN_POLL. Measured on
    this scenario: the polling loop wrote 258 events from the first reading to the deletion (two minutes of
    requests in flight, then three zeros), the waits 24."""
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, 600) as (handle, old):
        world.in_flight[old] = 3

        async def first_read() -> bool:
            return any(name == old for _, name, _ in world.in_flight_reads)

        await eventually(env, first_read, step=timedelta(milliseconds=500))
        await env.sleep(timedelta(seconds=1))  # the pass that read is over
        drain_from = await history_length(handle)
        # Two minutes of readings (20 at one a DRAIN_POLL), however slowly a loaded machine delivers them.
        await eventually(env, read_times(world, old, 20), step=DRAIN_POLL)
        assert await history_length(handle) == drain_from  # (the loop: ~20 timers and 20 reads)
        world.in_flight[old] = 0

        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        drain = await history_length(handle) - drain_from
    answers = [answer for _, name, answer in world.in_flight_reads if name == old]
    assert answers[-QUIET_READS_NEEDED:] == [0] * QUIET_READS_NEEDED
    assert drain < 60, drain


@pytest.mark.parametrize(
    ("max_drain_after", "last_reads"),
    [
        (10, [2]),  # shortened below what already passed: one last reading, then deleted
        (0, []),  # turned off: deleted at once, as KubeRay, nothing read
    ],
)
async def test_a_held_drain_follows_its_annotation_when_it_changes(
    time_skipping_env: WorkflowEnvironment, max_drain_after: int, last_reads: list[int]
) -> None:
    """Held until its drain deadline, an old cluster still goes at the next pass when the maximum drain time
    is shortened below what already passed or drains are turned off, as within a DRAIN_POLL before."""
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, 600) as (handle, old):
        world.in_flight[old] = 2

        await eventually(env, read_times(world, old, 5), step=DRAIN_POLL)
        reads_before = len(world.in_flight_reads)
        applied = await env.get_current_time()
        await apply(handle, manifest("v2", max_drain_after))

        await eventually(env, cluster_deleted(world, old), step=timedelta(milliseconds=500))
        times = await drain_times(handle, old)
    # Deleted at the pass the change starts, not at the 600 s deadline it was held for.
    assert times.deleted < applied + DEFAULT_MAX_DRAIN
    assert times.deleted < times.first_read + timedelta(seconds=600)
    assert [answer for _, name, answer in world.in_flight_reads[reads_before:] if name == old] == last_reads


async def test_a_held_drain_whose_annotation_is_removed_drains_for_the_default_time(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with switched_to_v2(env, world, 600) as (handle, old):
        world.in_flight[old] = 2

        await eventually(env, read_times(world, old, 2), step=DRAIN_POLL)
        await apply(handle, manifest("v2", None))

        await eventually(env, cluster_deleted(world, old), step=DRAIN_POLL)
        times = await drain_times(handle, old)
    times.assert_held_until_deadline(DEFAULT_MAX_DRAIN)


async def test_without_a_drain_wait_the_passes_read_every_drain_poll(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    """A worker that does not run the drain wait (NotFoundError): the held cluster is read by the passes
    again, DRAIN_POLL apart, and deleted after three zeros, as before the waits."""
    env, world = time_skipping_env, FakeRayWorld()
    world.drain_wait_registered = False
    async with switched_to_v2(env, world, 600) as (handle, old):
        await drain_after_reads(env, world, old, 4)
        times = await drain_times(handle, old)
    reads = [at for at, name, _ in world.in_flight_reads if name == old]
    answers = [answer for _, name, answer in world.in_flight_reads if name == old]
    slack = timedelta(milliseconds=500)
    assert all(later - earlier >= DRAIN_POLL - slack for earlier, later in itertools.pairwise(reads)), reads
    assert answers[-QUIET_READS_NEEDED:] == [0] * QUIET_READS_NEEDED
    assert times.deleted < times.first_read + timedelta(seconds=600)
