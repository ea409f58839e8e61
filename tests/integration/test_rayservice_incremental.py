"""NewClusterWithIncrementalUpgrade on real Ray Serve on the real stack, under continuous load through the
Gateway (the sandbox's Gateway controller, sandbox/realkube/gateway.py, sending each request by the
HTTPRoute's weights to a ready endpoint of the backend Service).

One RayService for the module (two real heads at most at any time): v1 is deployed once; the first test
upgrades it to v2 step by step and checks, per traffic step, that the share of answers from v2 follows the
HTTPRoute weight; the second starts v3, pauses it (the weights freeze), resumes, then aborts half-way and
checks that all traffic returns to v2 without a failed request.

The first upgrade also checks drained deletion through the Gateway (tests/integration/drain_checks.py):
long requests sent once the old cluster's share has begun to fall are answered by it after its drain
started, and it goes only after them.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from raypilot.load import SteadyLoad
from sandbox.testing import ConditionTimeout, wait_until
from tests.integration.drain_checks import (
    LONG_REQUESTS,
    MAX_DRAIN_S,
    answered_after_drain_start,
    held_requests,
    old_share_between,
)
from tests.integration.rayservice_helpers import head_alone, serving_alone
from tests.integration.route_watch import (
    RouteRecorder,
    Segment,
    StatusSampler,
    routed_gateway_url,
    segments,
)
from tests.integration.stack import Stack
from tests.workflows.rayservice.incremental_simulation import expected_upgrade_steps, traffic_steps
from tests.workflows.timer_dues import steps_timed_by_timers, timer_dues
from workflows.decisions.rayservice.drain import MAX_DRAIN_ANNOTATION
from workflows.search_attributes import RAY_PHASE

pytestmark = [pytest.mark.ray, pytest.mark.devserver, pytest.mark.timeout(1200)]

T = TypeVar("T")
EXAMPLE = yaml.safe_load((Path(__file__).parents[2] / "examples" / "rayservice-incremental.yaml").read_text())
NAME = "rs-inc"
STEP_PERCENT = 20
INTERVAL_S = 5
SURGE_PERCENT = 50
SHARE_TOLERANCE = 10.0
# Answers counted after the old cluster's deletion (v2 alone at weight 100); each weighted step gets its ~5 s
# of the load (200-400 answers here) whatever the total.
AFTER_DELETION_REQUESTS = 300
DELETION_DELAY_S = 5
DRAIN_S = MAX_DRAIN_S  # then the drain (at most this: the annotation's)
TIMESTAMP_ROUNDING = timedelta(milliseconds=1)
ABORT_AT_PERCENT = 2 * STEP_PERCENT  # "half-way": the abort comes once the new cluster has this much traffic


def manifest(namespace: str, version: str) -> dict[str, Any]:
    """The example with step 20 / interval 5 s / surge 50, a 5 s deletion delay and a drain of MAX_DRAIN_S at
    most; `version` is what the sandbox app answers (APP_VERSION of the head), so each version is a new
    RayCluster spec."""
    body: dict[str, Any] = copy.deepcopy(EXAMPLE)
    body["metadata"] = {
        "name": NAME,
        "namespace": namespace,
        "annotations": {MAX_DRAIN_ANNOTATION: str(int(MAX_DRAIN_S))},
    }
    spec = body["spec"]
    # Before the promotion the old cluster's target_capacity reaches 0 and Serve stops its replicas, each
    # after its requests or graceful_shutdown_timeout_s (20 s by default): the held requests need longer.
    serve_config = yaml.safe_load(spec["serveConfigV2"])
    for application in serve_config["applications"]:
        for deployment in application["deployments"]:
            deployment["graceful_shutdown_timeout_s"] = MAX_DRAIN_S
    spec["serveConfigV2"] = yaml.safe_dump(serve_config)
    spec["rayClusterDeletionDelaySeconds"] = DELETION_DELAY_S
    spec["upgradeStrategy"]["clusterUpgradeOptions"].update(
        maxSurgePercent=SURGE_PERCENT, stepSizePercent=STEP_PERCENT, intervalSeconds=INTERVAL_S
    )
    head = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [{"name": "APP_VERSION", "value": version}]
    return head_alone(body)


def sides(status: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return status.get("activeServiceStatus") or {}, status.get("pendingServiceStatus") or {}


def steady_load(url: str) -> SteadyLoad:
    """Four clients pausing 20 ms between requests (~100 requests/s here): a few hundred answers per traffic
    step, and it leaves CPU for the Ray head that starts meanwhile (an unbounded load on 2 cores made a
    new head miss Ray's fixed 30 s startup deadline again and again)."""
    return SteadyLoad(url, concurrency=4, pause_s=0.02)


def split(status: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(targetCapacity, trafficRoutedPercent) of the active and the pending side."""
    return [(side.get("targetCapacity"), side.get("trafficRoutedPercent")) for side in sides(status)]


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})


@dataclass
class Service:
    stack: Stack
    namespace: str
    handle: WorkflowHandle[Any, Any]
    url: str

    async def status(self) -> dict[str, Any]:
        return await self.stack.status(self.handle)

    async def wait_status(
        self, holds: Callable[[dict[str, Any]], bool], within: float, what: str
    ) -> dict[str, Any]:
        """`Stack.wait_status`, failing with the last status."""
        try:
            return await self.stack.wait_status(self.handle, holds, within=within, what=what)
        except ConditionTimeout as timeout:
            description = await self.handle.describe()
            activities = [
                (a.activity_type.name, a.attempt, a.last_failure.message)
                for a in description.raw_description.pending_activities
            ]
            raise AssertionError(
                f"{timeout}\nstatus: {await self.status()}\npending activities: {activities}\n"
                f"history tail:\n{await history_tail(self.handle)}"
            ) from None

    def cluster_exists(self, name: str) -> bool:
        return self.stack.exists("rayclusters", self.namespace, name)

    def recorder(self) -> RouteRecorder:
        return RouteRecorder(self.stack.custom, self.namespace, f"{NAME}-httproute")

    async def active_cluster(self) -> str:
        return str(sides(await self.status())[0]["rayClusterName"])

    @asynccontextmanager
    async def followed_under_load(
        self, version: str
    ) -> AsyncIterator[tuple[SteadyLoad, RouteRecorder, StatusSampler]]:
        """Steady load on the service, its route's weights and its status followed, once 200 requests were
        answered, all by `version`: (the load, the route recorder, the status sampler)."""
        sampler = StatusSampler(self.status)
        async with steady_load(self.url) as load, self.recorder() as route, sampler:
            await load.wait_for_requests(200)
            assert set(load.counts()) == {version}, load.counts()
            yield load, route, sampler


async def history_tail(handle: WorkflowHandle[Any, Any], count: int = 60) -> str:
    """The last events of the workflow's history, one line each (for failure messages)."""
    history = await handle.fetch_history()
    scheduled: dict[int, str] = {}
    lines = []
    for event in history.events:
        kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        detail = ""
        if event.HasField("activity_task_scheduled_event_attributes"):
            detail = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = detail
        for field in ("activity_task_completed", "activity_task_failed", "activity_task_canceled"):
            if event.WhichOneof("attributes") == f"{field}_event_attributes":
                attributes = getattr(event, f"{field}_event_attributes")
                detail = scheduled.get(attributes.scheduled_event_id, "")
                if field == "activity_task_failed":
                    detail += " " + attributes.failure.message
        if event.HasField("timer_started_event_attributes"):
            detail = str(event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta())
        lines.append(f"{event.event_time.ToDatetime():%H:%M:%S.%f} {kind} {detail}")
    return "\n".join(lines[-count:])


@pytest.fixture(scope="module")
async def service(real_ray_kube_stack: Stack) -> AsyncIterator[Service]:
    stack = real_ray_kube_stack
    namespace = stack.namespace()
    handle = await stack.start(manifest(namespace, "v1"))
    await stack.wait_status(handle, serving_alone, within=480, what="v1 active")

    address = await routed_gateway_url(stack.custom, namespace, NAME)
    yield Service(stack, namespace, handle, address)
    await handle.execute_update("delete", result_type=dict)


async def start_upgrade(service: Service, version: str, old: str) -> str:
    """Apply the new version; returns the pending cluster's name once the upgrade started."""
    await service.handle.execute_update("apply", manifest(service.namespace, version), result_type=dict)
    status = await service.wait_status(
        lambda s: sides(s)[1].get("rayClusterName") not in (None, "", old),
        within=60,
        what=f"{version} pending",
    )
    return str(sides(status)[1]["rayClusterName"])


async def eventually(probe: Callable[[], Awaitable[T | None]], *, within: float, what: str) -> T:
    """`wait_until` for an async probe, typed."""
    found: T = await wait_until(probe, within=within, interval=0.1, what=what)
    return found


def cluster_gone(service: Service, name: str) -> Callable[[], Awaitable[bool | None]]:
    async def probe() -> bool | None:
        return await asyncio.to_thread(lambda: not service.cluster_exists(name) or None)

    return probe


def describe(found: list[Segment], version: str) -> str:
    return ", ".join(
        f"w{s.weight}:{s.share(version):.1f}%/{s.answered}@{s.end - s.start:.1f}s" for s in found
    )


async def test_upgrade_moves_traffic_by_route_weight_without_failures(service: Service) -> None:
    old = await service.active_cluster()
    fresh = httpx.AsyncClient(timeout=MAX_DRAIN_S, trust_env=False)
    async with held_requests() as (long, release), fresh, service.followed_under_load("v1") as followed:
        load, route, sampler = followed
        began = time.monotonic()
        new = await start_upgrade(service, "v2", old)
        await service.wait_status(old_share_between, within=480, what="the old cluster's share falling")
        long_requests = [
            asyncio.create_task(fresh.get(service.url, params=long, headers={"Connection": "close"}))
            for _ in range(2 * LONG_REQUESTS)
        ]
        final = await service.wait_status(
            lambda s: sides(s)[0].get("rayClusterName") == new and not sides(s)[1].get("rayClusterName"),
            within=480,
            what="v2 promoted",
        )
        promoted = time.monotonic()
        answers = await answered_after_drain_start(
            service.stack, service.handle, service.namespace, old, long_requests, release
        )
        versions = [answer.json()["version"] for answer in answers]
        assert "v1" in versions, versions  # some went to the old cluster, and were answered by it
        await eventually(cluster_gone(service, old), within=60 + DRAIN_S, what="old cluster deleted")
        deleted = time.monotonic()
        await load.wait_for_requests(len(load.samples) + AFTER_DELETION_REQUESTS)
        ended = time.monotonic()
    found = segments(route.changes, f"{new}-serve-svc", load, ended)
    recorded = [(at, percent) for at, percent in sampler.traffic_steps(new) if percent > 0]
    workflow_gaps = [
        (later[0] - earlier[0]).total_seconds() for earlier, later in itertools.pairwise(recorded)
    ]
    report = (
        f"{len(load.samples)} requests, {len(load.failures)} failed; upgrade {promoted - began:.1f}s, "
        f"old deleted {deleted - promoted:.1f}s after promotion; "
        f"v2 share per weight: {describe(found, 'v2')}; "
        f"steps in workflow time: {[p for _, p in recorded]} gaps {[round(g, 2) for g in workflow_gaps]}"
    )
    print(report)
    assert not load.failures, (load.failures[:5], report)
    assert final["serviceStatus"] == "Running"
    assert condition(final, "UpgradeInProgress").get("status") == "False"
    # `promoted` is when this test saw the promotion (a status poll that a loaded machine delays by seconds),
    # so the wall-clock delay it measures can be short of the real one: this only shows that a delay applies.
    assert deleted - promoted >= DELETION_DELAY_S - 2.5, report
    traffic_events = traffic_steps(expected_upgrade_steps(SURGE_PERCENT, STEP_PERCENT))
    assert [percent for _, percent in recorded] == [step.percent for step in traffic_events], report
    # Each traffic step is due exactly intervalSeconds after the previous one: none came early, and each was
    # woken by a durable timer set for that instant. The first step after a capacity change waits for Serve's
    # new replicas too, which take as long as the machine gives them.
    after_capacity = frozenset(number for number, step in enumerate(traffic_events) if step.after_capacity)
    dues = timer_dues(await service.handle.fetch_history())
    timing = steps_timed_by_timers(
        [at for at, _ in recorded], timedelta(seconds=INTERVAL_S), dues, TIMESTAMP_ROUNDING, after_capacity
    )
    assert not timing, (timing, report)
    weights = [s.weight for s in found]
    assert weights[0] == 0, report
    assert weights[-1] == 100, report
    assert weights == sorted(weights), report
    for segment in found:
        assert abs(segment.share("v2") - segment.weight) <= SHARE_TOLERANCE, report
    # Not early in wall time either, as the route showed them: each route write follows its decision by one
    # activity, whose latency varies by a second on a loaded machine.
    gaps = [later.start - earlier.start for earlier, later in itertools.pairwise(found[1:])]
    print("traffic step gaps on the route (s):", [round(g, 2) for g in gaps])
    assert all(gap >= INTERVAL_S - 1.5 for gap in gaps), (gaps, report)


async def test_pause_freezes_then_abort_returns_all_traffic(service: Service) -> None:
    active = await service.active_cluster()
    async with service.followed_under_load("v2") as (load, route, sampler):
        pending = await start_upgrade(service, "v3", active)
        backend = f"{pending}-serve-svc"

        def pending_weight() -> int:
            latest = route.latest()
            return latest.weight_of(backend) if latest is not None else 0

        await wait_until(lambda: pending_weight() >= STEP_PERCENT, within=480, interval=0.1, what="step 1")
        await service.handle.execute_update("pause", result_type=dict)
        paused_at, frozen = time.monotonic(), pending_weight()

        async def status_of_the_frozen_route() -> dict[str, Any] | None:
            # The status commits a step after the route took it: the pause can land in between.
            status = await service.status()
            return status if sides(status)[1].get("trafficRoutedPercent") == frozen else None

        paused_status = await wait_until(status_of_the_frozen_route, within=30, what="the paused status")
        await asyncio.sleep(2.5 * INTERVAL_S)
        changed = [c for c in route.changes if c.at > paused_at + 0.5]
        assert not changed, changed
        assert split(await service.status()) == split(paused_status)
        await service.handle.execute_update("resume", result_type=dict)
        await wait_until(
            lambda: pending_weight() >= ABORT_AT_PERCENT, within=120, interval=0.1, what="half-way"
        )
        await service.handle.execute_update("abort", result_type=dict)
        aborted = await service.status()
        phase = (await service.handle.describe()).typed_search_attributes.get(RAY_PHASE)
        final = await service.wait_status(serving_alone, within=480, what="rolled back")
        rolled_back = time.monotonic()
        await eventually(cluster_gone(service, pending), within=60 + DRAIN_S, what="pending cluster deleted")
        await load.wait_for_requests(len(load.samples) + 500)
        ended = time.monotonic()
    found = segments(route.changes, backend, load, ended)
    report = (
        f"{len(load.samples)} requests, {len(load.failures)} failed; paused at w{frozen}; "
        f"v3 share per weight: {describe(found, 'v3')}; rollback steps {sampler.traffic_steps(active)[-3:]}"
    )
    print(report)
    assert not load.failures, (load.failures[:5], report)
    assert condition(aborted, "RollbackInProgress").get("status") == "True", aborted
    assert phase == "RollingBack"
    assert ("True", "UpgradeAborted") in sampler.conditions_seen("RollbackInProgress")
    assert ("False", "NoPendingCluster") in sampler.conditions_seen("UpgradeInProgress")
    steps_back = sampler.traffic_steps(active)[-3:]
    # Traffic went back by the same steps, intervalSeconds apart: from where the abort found it to 100.
    assert [percent for _, percent in steps_back] == list(range(100 - ABORT_AT_PERCENT, 101, STEP_PERCENT))
    dues = timer_dues(await service.handle.fetch_history())
    timing = steps_timed_by_timers(
        [at for at, _ in steps_back], timedelta(seconds=INTERVAL_S), dues, TIMESTAMP_ROUNDING
    )
    assert not timing, (timing, steps_back)
    assert sides(final)[0]["rayClusterName"] == active
    assert final["serviceStatus"] == "Running"
    assert load.counts(rolled_back, ended).keys() == {"v2"}
    for segment in found:
        assert abs(segment.share("v3") - segment.weight) <= SHARE_TOLERANCE, report
