"""P4 / P4b: history events and billable Temporal actions of three typical lives, beside a tick loop.

Runs on Temporal's time-skipping test server with the workflows' fake activities (tests/workflows), so
hours of workflow time pass in seconds:
- an HTTPMode RayJob whose Ray job runs 10 min, cluster deleted 60 s after it ends (shutdown + TTL);
- a RayService idle for 24 h after its first deployment (events and actions counted over the 24 h only);
- a 4-step incremental upgrade (stepSizePercent 25), counted from the `apply` to the promoted cluster.

Actions = the billed history events (bench.arithmetic.count_actions) + wait retries at their attempt timeout
+ heartbeats that reach the server: each wait activity's outstanding time (from its events) divided by
max(how often the activity calls heartbeat, the worker's throttle for its heartbeat timeout), both read from
the wait's scheduled event. The fakes' own retries are not counted: the real waits do not end while nothing
changes. The RayJob's observers run apart from its history (fakes here): their billed events and heartbeats
are added from what the RayJob's history shows of them (`observers_cost`).

Reference, same run: `BenchKubeRayTickLoop` (bench/reference_workflows.py), one observe activity and one
timer per tick, at KubeRay's cadence (RayJob 3 s, RayService 2 s) for the same workflow time. It runs
twice, for two short lengths, and is extended linearly to the full length (its cost per tick is constant):
43,200 real ticks would take the test server many minutes.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.heartbeat import DEFAULT_HEARTBEAT_SECONDS
from activities.observer_fanout import OBSERVER_HEARTBEAT_SECONDS
from bench.arithmetic import (
    KUBERAY_RAYJOB_TICK_S,
    KUBERAY_RAYSERVICE_TICK_S,
    Figure,
    activity_spans,
    aware,
    count_actions,
    heartbeat_throttle_s,
    heartbeats_reaching_server,
    observer_heartbeats,
    observer_run_actions,
    parse_event_time,
    signal_times,
)
from bench.reference_workflows import KubeRayTickLoop, observe
from bench.suite import BenchContext
from models.operator import OperatorConfig
from raypilot.search_attributes import ensure_search_attributes
from raypilot.testing.kubernetes_observer_world import FakeKubernetesObserver
from raypilot.testing.observer_world import FakeObserver
from raypilot.testing.rayjob_scenarios import eventually as in_real_time
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeWorld
from raypilot.testing.rayservice_scenarios import (
    eventually,
    incremental_manifest,
    rayservice_manifest,
    running_rayservice,
    settled,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.time_skipping import start_time_skipping_env
from raypilot.testing.worker import running_worker
from raypilot.worker import MAX_HEARTBEAT_THROTTLE
from wire import names
from wire.kubernetes_observer import KUBE_OBSERVED_SIGNAL
from wire.observer import OBSERVED_SIGNAL
from workflows.observer.loop import IDLE as OBSERVER_IDLE

# The worker's heartbeat throttle (raypilot/worker.py): what reaches the server is at most one heartbeat per
# min(0.8 x heartbeat timeout, this), read per activity from its scheduled event (bench.arithmetic).
MAX_THROTTLE_S = MAX_HEARTBEAT_THROTTLE.total_seconds()
WAIT_ATTEMPT_S = 3600.0  # a wait's attempt timeout when its scheduled event does not say
# Waits that call heartbeat at each poll (every 2 s: the workflows' poll_seconds) besides the background beat.
POLL_HEARTBEAT_WAITS = {names.WAIT_RAY_JOB: 2.0, names.WAIT_GATEWAY: 2.0}
# Waits that heartbeat a third of their heartbeat timeout (activities.heartbeat.quiet_heartbeat_interval).
QUIET_WAITS = frozenset({names.WAIT_SERVE, names.WAIT_RUNS_CLOSED})


@dataclass(frozen=True)
class Cost:
    events: int
    actions: int
    heartbeats: int

    @property
    def billable(self) -> int:
        return self.actions + self.heartbeats


def heartbeat_call_period_s(activity_type: str, heartbeat_timeout_s: float | None) -> float:
    """How often a wait activity calls heartbeat (activities/waits.py): the quiet waits a third of their
    heartbeat timeout; the polling waits at each poll; the Kubernetes watches a third of it, at most 10 s."""
    timeout = heartbeat_timeout_s or 0.0
    if activity_type in QUIET_WAITS:
        return timeout / 3 if timeout > 0 else DEFAULT_HEARTBEAT_SECONDS
    background = min(DEFAULT_HEARTBEAT_SECONDS, timeout / 3) if timeout > 0 else DEFAULT_HEARTBEAT_SECONDS
    return min(POLL_HEARTBEAT_WAITS.get(activity_type, background), background)


def cost_of(
    events: Sequence[Mapping[str, Any]], since: datetime | None = None, until: datetime | None = None
) -> Cost:
    """The cost of the events after `since` (all by default), waits counted while outstanding in the
    window [since, until]: the heartbeats that reach the server (each wait's call period against the
    worker's throttle for its heartbeat timeout) and one retry per attempt timeout."""
    window = [
        event for event in events if since is None or parse_event_time(event["eventTime"]) > aware(since)
    ]
    counted = count_actions(window)
    heartbeats = retries = 0
    for span in activity_spans(events, since, until):
        if ".wait_" not in span.activity_type:  # waits are named <prefix>.wait_<what> (wire/names.py)
            continue
        throttle = heartbeat_throttle_s(span.heartbeat_timeout_s, MAX_THROTTLE_S, MAX_THROTTLE_S)
        period = heartbeat_call_period_s(span.activity_type, span.heartbeat_timeout_s)
        heartbeats += heartbeats_reaching_server(span.seconds, period, throttle)
        retries += int(span.seconds // (span.start_to_close_s or WAIT_ATTEMPT_S))
    return Cost(len(window), counted.total + retries, heartbeats)


async def time_skipping() -> WorkflowEnvironment:
    env = await start_time_skipping_env(pydantic_data_converter)
    await ensure_search_attributes(env.client, env.client.namespace)
    return env


async def rayjob_ten_minutes(minutes: float, *, observer: bool = True) -> Cost:
    """With the observers (the default of a deployed worker) the RayJob's own history, plus what its two
    observers cost: the Ray job observer of its cluster (the job's status) and the Kubernetes observer of its
    namespace (its RayCluster getting ready). The RayJob runs on a cluster of its own, alone in its namespace,
    so each observer run serves this one RayJob and is counted in full (`observers_cost`)."""
    env = await time_skipping()
    try:
        world = FakeWorld(
            job_duration=timedelta(minutes=minutes), config=OperatorConfig(job_observer=observer)
        )
        fake_observer = FakeObserver(world, env.client, env)
        # Its RayCluster's readiness comes from the namespace's Kubernetes observer (a signal) too.
        k8s_observer = FakeKubernetesObserver(world, env.client)
        manifest = rayjob_manifest(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=60)
        try:
            activities = k8s_observer.replace(fake_observer.activities())
            async with running_worker(env.client, activities=activities) as queue:
                if not observer:
                    handle = await start(env.client, manifest, queue)
                    await handle.result()
                else:
                    # A workflow waiting for a signal has no timer to skip to: time moves only when the fake
                    # observer holds a running job (it skips to the job's end) and for the TTL below.
                    with env.auto_time_skipping_disabled():
                        handle = await start(env.client, manifest, queue)
                        await _skip_ttl_once_finished(env, handle, timedelta(seconds=61))
                        await handle.result()
        finally:
            await fake_observer.stop()
            await k8s_observer.stop()
        events = (await handle.fetch_history()).to_json_dict()["events"]
        cost = cost_of(events)
        if not observer:
            return cost
        observers = observers_cost(events)
        return Cost(cost.events, cost.actions + observers.actions, cost.heartbeats + observers.heartbeats)
    finally:
        await env.shutdown()


def observers_cost(events: Sequence[Mapping[str, Any]]) -> Cost:
    """What the observers that served one RayJob alone cost (their own histories, not the RayJob's: no
    events counted here): each observer run that signalled it serves this one watch
    (`observer_run_actions(1)`), and its activity lives from that watch to the last view it sent plus the
    observer's idle time, heartbeating as the activity does. The watch is taken at the first signal (the
    registration just before it is not in view here), so a life is at most a second short."""
    actions = heartbeats = 0
    for signal in (OBSERVED_SIGNAL, KUBE_OBSERVED_SIGNAL):
        times = signal_times(events, signal)
        if not times:
            continue
        life = (times[-1] - times[0] + OBSERVER_IDLE).total_seconds()
        actions += observer_run_actions(1)
        # Both observer activities send their first heartbeat a period after they start
        # (activities/observer.py, activities/kubernetes/observer.py).
        heartbeats += observer_heartbeats(life, OBSERVER_HEARTBEAT_SECONDS, first_at_once=False)
    return Cost(0, actions, heartbeats)


async def _skip_ttl_once_finished(
    env: WorkflowEnvironment, handle: WorkflowHandle[Any, Any], ttl: timedelta
) -> None:
    async def finished() -> bool:
        status = await handle.query("status")
        return status.get("jobDeploymentStatus") in ("Complete", "Failed")

    await in_real_time(finished, within=120)
    await settled(handle)
    await env.sleep(ttl)


async def idle_rayservice(hours: float) -> Cost:
    env = await time_skipping()
    try:
        world = FakeRayWorld()
        async with running_rayservice(env, world, rayservice_manifest()) as handle:
            await until_ready(env, handle, settle=True)
            run_id = (await handle.describe()).run_id
            since = await env.get_current_time()
            await settled(handle)
            await env.sleep(timedelta(hours=hours))
            await status_of(handle)
            until = await env.get_current_time()
            if (await handle.describe()).run_id != run_id:
                raise RuntimeError("the idle RayService continued as new: count across runs")
            events = (await handle.fetch_history()).to_json_dict()["events"]
            return cost_of(events, since, until)
    finally:
        await env.shutdown()


def four_steps(version: str) -> dict[str, Any]:
    manifest = copy.deepcopy(incremental_manifest(version))
    manifest["spec"]["upgradeStrategy"]["clusterUpgradeOptions"].update(stepSizePercent=25)
    return manifest


async def incremental_upgrade() -> tuple[Cost, float]:
    """The cost of a 4-step upgrade and its length in workflow time (seconds)."""
    env = await time_skipping()
    try:
        world = FakeRayWorld()
        async with running_rayservice(env, world, four_steps("v1")) as handle:
            await until_ready(env, handle, settle=True)

            async def routed() -> bool:
                return world.route is not None

            await eventually(env, routed, settle=True)
            since = await env.get_current_time()
            await handle.execute_update("apply", four_steps("v2"))
            new = ""

            async def promoted() -> bool:
                nonlocal new
                status = await status_of(handle)
                pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
                new = new or str(pending or "")
                return bool(new) and status["activeServiceStatus"]["rayClusterName"] == new

            await eventually(env, promoted, settle=True)
            await until_ready(env, handle, settle=True)
            until = await env.get_current_time()
            events = (await handle.fetch_history()).to_json_dict()["events"]
            return cost_of(events, since, until), (until - since).total_seconds()
    finally:
        await env.shutdown()


async def tick_loop_cost(seconds: float, tick_s: float, sample_ticks: tuple[int, int]) -> Cost:
    """The tick loop's cost for `seconds` of workflow time: two short runs, extended linearly."""
    env = await time_skipping()
    try:
        costs: list[Cost] = []
        async with running_worker(
            env.client, activities=[observe], workflows=[KubeRayTickLoop], replay_every_task=False
        ) as queue:
            for ticks in sample_ticks:
                handle: WorkflowHandle[Any, Any] = await env.client.start_workflow(
                    "BenchKubeRayTickLoop",
                    args=[ticks, tick_s],
                    id=f"tick-loop-{uuid.uuid4().hex[:6]}",
                    task_queue=queue,
                )
                await handle.result()
                costs.append(cost_of((await handle.fetch_history()).to_json_dict()["events"]))
    finally:
        await env.shutdown()
    (short, short_cost), (long, long_cost) = zip(sample_ticks, costs, strict=True)
    ticks = seconds / tick_s

    def extend(low: int, high: int) -> int:
        per_tick = (high - low) / (long - short)
        return round(low + per_tick * (ticks - short))

    return Cost(
        extend(short_cost.events, long_cost.events),
        extend(short_cost.actions, long_cost.actions),
        extend(short_cost.heartbeats, long_cost.heartbeats),
    )


def figure_pair(
    name: str, ours: Cost, loop: Cost, event_target: int, action_target: int | None
) -> list[Figure]:
    return [
        Figure(
            "P4",
            f"history events: {name}",
            f"{ours.events}",
            f"tick loop: {loop.events} ({ours.events / loop.events:.3f} of it)",
            f"<= {event_target}",
            ours.events <= event_target,
        ),
        Figure(
            "P4b",
            f"billable actions: {name}",
            f"{ours.billable} ({ours.actions} from history + {ours.heartbeats} heartbeats)",
            f"tick loop: {loop.billable} ({ours.billable / loop.billable:.3f} of it)",
            f"<= {action_target:,}" if action_target is not None else "report",
            ours.billable <= action_target if action_target is not None else None,
        ),
    ]


async def run(context: BenchContext) -> list[Figure]:
    minutes, hours = (1.0, 0.1) if context.smoke else (10.0, 24.0)
    samples = (2, 4) if context.smoke else (20, 60)
    job = await rayjob_ten_minutes(minutes)
    job_loop = await tick_loop_cost(minutes * 60 + 60, KUBERAY_RAYJOB_TICK_S, samples)
    idle = await idle_rayservice(hours)
    idle_loop = await tick_loop_cost(hours * 3600, KUBERAY_RAYSERVICE_TICK_S, samples)
    upgrade, length = await incremental_upgrade()
    upgrade_loop = await tick_loop_cost(length, KUBERAY_RAYSERVICE_TICK_S, samples)
    context.log(f"   P4 upgrade took {length:.0f} s of workflow time")
    return [
        *figure_pair(f"HTTPMode RayJob, {minutes:g} min + TTL 60 s", job, job_loop, 60, 40),
        *figure_pair(f"idle RayService, {hours:g} h", idle, idle_loop, 50, 1500),
        *figure_pair(f"4-step incremental upgrade ({length:.0f} s)", upgrade, upgrade_loop, 200, None),
    ]
