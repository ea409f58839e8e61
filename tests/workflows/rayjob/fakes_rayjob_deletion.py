"""The fake RayJob world with a clock, and what the deletion tests assert with it: each deletion call is
recorded with the test server's time at which it ran, so tests can assert that a policy fired at exactly
endTime + TTL in workflow time; `config_from_env` makes the worker read the operator configuration from the
environment with the real activity, as a deployed worker does.

The clock is the time-skipping server's (`WorkflowEnvironment.get_current_time`): it does not skip while an
activity runs, so the time an activity reads is the time of the workflow task that scheduled it (plus the
milliseconds the worker needed). Local activities cannot tell workflow time themselves (their scheduled time
is the worker's wall clock, which time skipping leaves behind).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from activities.config import read_operator_config as read_operator_config_from_env
from models.operator import OperatorConfig
from models.rayjob import DeletionPolicyType
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeActivities, FakeWorld
from tests.workflows.timer_dues import deletion_timer_windows
from wire import names
from wire.kubernetes import DeleteObject, ObjectKey, OwnedObjects, RayResourceKey
from wire.names import READ_OPERATOR_CONFIG

Clock = Callable[[], Awaitable[datetime]]

# The summary of the workflow's deletion timer (workflows/rayjob_deletion.py).

# The calls a deletion policy makes: DeleteWorkers, DeleteCluster, and DeleteSelf's two.
DELETION_CALLS = (
    names.SUSPEND_WORKER_GROUPS,
    names.DELETE_RAYCLUSTER,
    names.DELETE_OWNED_OBJECTS,
    names.DELETE_RAY_RESOURCE,
)


@dataclass
class TimedWorld(FakeWorld):
    clock: Clock | None = None
    config_from_env: bool = False
    # How many DeleteCluster / DeleteWorkers calls the API server rejects for good (as a 403 would be).
    rejected_deletions: int = 0
    # (activity name, server time when it ran), in call order.
    timed_calls: list[tuple[str, datetime]] = field(default_factory=list)

    def activities(self) -> list[Callable[..., Any]]:
        return TimedActivities(self).all()

    def deletion_calls(self) -> list[tuple[str, datetime]]:
        return [(name, at) for name, at in self.timed_calls if name in DELETION_CALLS]


class TimedActivities(FakeActivities):
    world: TimedWorld

    def __init__(self, world: TimedWorld) -> None:
        super().__init__(world)
        self.world = world

    @activity.defn(name=READ_OPERATOR_CONFIG)
    async def read_operator_config(self) -> OperatorConfig:
        if self.world.config_from_env:
            # The fake world has no cluster observer: its Ray jobs are watched by the fake wait activity.
            return read_operator_config_from_env().model_copy(update={"job_observer": False})
        return await super().read_operator_config()

    async def _time(self, name: str) -> None:
        if self.world.clock is not None:
            self.world.timed_calls.append((name, await self.world.clock()))

    def _maybe_reject(self) -> None:
        if self.world.rejected_deletions > 0:
            self.world.rejected_deletions -= 1
            raise ApplicationError("forbidden", type="Forbidden", non_retryable=True)

    @activity.defn(name=names.SUSPEND_WORKER_GROUPS)
    async def suspend_worker_groups(self, key: ObjectKey) -> dict[str, Any] | None:
        await self._time(names.SUSPEND_WORKER_GROUPS)
        self._maybe_reject()
        return await super().suspend_worker_groups(key)

    @activity.defn(name=names.DELETE_RAYCLUSTER)
    async def delete_raycluster(self, request: DeleteObject) -> bool:
        await self._time(names.DELETE_RAYCLUSTER)
        self._maybe_reject()
        return await super().delete_raycluster(request)

    @activity.defn(name=names.DELETE_OWNED_OBJECTS)
    async def delete_owned_objects(self, request: OwnedObjects) -> list[dict[str, str]]:
        await self._time(names.DELETE_OWNED_OBJECTS)
        return await super().delete_owned_objects(request)

    @activity.defn(name=names.DELETE_RAY_RESOURCE)
    async def delete_ray_resource(self, key: RayResourceKey) -> bool:
        await self._time(names.DELETE_RAY_RESOURCE)
        return await super().delete_ray_resource(key)


def kube_time(text: str) -> datetime:
    """A status timestamp (`2026-01-01T00:00:00Z`) as a datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def due_after_end(result: dict[str, Any], ttl_seconds: int) -> datetime:
    """endTime + TTL: when a policy with that TTL is due."""
    return kube_time(result["endTime"]) + timedelta(seconds=ttl_seconds)


FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
P = DeletionPolicyType
# How late after its due time a call may come: loose on purpose (a loaded CI machine); precision is what
# `deletion_timer_windows` checks.
WORKER_LATENCY = timedelta(seconds=5)
# What each policy calls, in order.
CALLS: dict[P, list[str]] = {
    P.DELETE_WORKERS: [names.SUSPEND_WORKER_GROUPS],
    P.DELETE_CLUSTER: [names.DELETE_RAYCLUSTER],
    P.DELETE_SELF: [names.DELETE_OWNED_OBJECTS, names.DELETE_RAY_RESOURCE],
    P.DELETE_NONE: [],
}


def rule(policy: P, ttl: int, job_status: str | None = None, deployment: str | None = None) -> dict[str, Any]:
    condition: dict[str, Any] = {"ttlSeconds": ttl}
    if job_status is not None:
        condition["jobStatus"] = job_status
    if deployment is not None:
        condition["jobDeploymentStatus"] = deployment
    return {"policy": policy.value, "condition": condition}


def with_rules(*rules: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return rayjob_manifest(deletionStrategy={"deletionRules": list(rules)}, **spec)


async def run_to_end(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: TimedWorld, manifest: dict[str, Any]
) -> tuple[dict[str, Any], list[tuple[datetime, datetime]]]:
    """Runs the workflow until it completes: its result and its deletion timers' windows."""
    world.clock = env.get_current_time
    async with fake_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        result: dict[str, Any] = await handle.result()
    return result, await deletion_timer_windows(handle)


def assert_timers_set_for(windows: list[tuple[datetime, datetime]], dues: list[datetime]) -> None:
    assert len(windows) == len(dues), (windows, dues)
    for (earliest, latest), due in zip(windows, dues, strict=True):
        assert earliest <= due <= latest, (earliest, due, latest)


def assert_fired_at(world: TimedWorld, expected: list[tuple[P, datetime]]) -> None:
    """The fake saw exactly these policies' calls, in this order, each policy's first call at or after its
    due time and, unless it is the last, before the next one was due (or WORKER_LATENCY after its own due
    time, when the next is due sooner): the call answers its own timer, whose exact time
    `assert_timers_set_for` checks in the history, however long a loaded machine took to run it."""
    calls = world.deletion_calls()
    assert [name for name, _ in calls] == [name for policy, _ in expected for name in CALLS[policy]]
    first = 0
    for index, (policy, due) in enumerate(expected):
        if CALLS[policy]:
            at = calls[first][1]
            assert due <= at, (policy, due, at)
            later = [next_due for _, next_due in expected[index + 1 :] if next_due > due]
            if later:
                bound = max(min(later), due + WORKER_LATENCY)
                assert at < bound, (policy, due, at, bound)
        first += len(CALLS[policy])


def assert_effect(world: TimedWorld, policy: P, cluster_name: str) -> None:
    if policy == P.DELETE_WORKERS:
        groups = world.clusters[cluster_name]["spec"]["workerGroupSpecs"]
        assert [group.get("suspend") for group in groups] == [True]
        assert world.clusters[cluster_name]["status"]["state"] == "ready"  # the head is untouched
    elif policy == P.DELETE_CLUSTER:
        assert cluster_name not in world.clusters
        assert "sample-head-svc" in world.services
        assert world.deleted_resources == []
    elif policy == P.DELETE_SELF:
        assert (world.clusters, world.services) == ({}, {})
        [rayjob] = world.deleted_resources
        assert (rayjob.kind, rayjob.namespace, rayjob.name) == ("RayJob", "default", "sample")
    if policy != P.DELETE_SELF:
        assert world.deleted_resources == []


def assert_one_deletion_at(
    world: TimedWorld,
    result: dict[str, Any],
    timers: list[tuple[datetime, datetime]],
    policy: P,
    ttl_seconds: int,
) -> None:
    """The run deleted once: one timer set for endTime + TTL, `policy`'s calls at that time, its effect."""
    due = due_after_end(result, ttl_seconds)
    assert_timers_set_for(timers, [due])
    assert_fired_at(world, [(policy, due)])
    assert_effect(world, policy, result["rayClusterName"])
