"""P6: latency and failed requests during blue-green and incremental upgrades on real Ray Serve, raypilot
beside KubeRay's operator v1.5.0 in the same run on the same stack.

On the real stack whose pods run real Ray (bench/realkube_stack.py's `real_ray_stack`: KubeRay's operator
makes the heads' Pods, the node agent runs real Ray nodes in them), each upgrade runs once per side, one after
the other (two clusters at most at a time; raypilot first for blue-green, KubeRay first for incremental):
raypilot's workflow, and the same manifest as a `ray.io/v1` RayService that KubeRay's operator reconciles
itself (bench/rayservice_sides.py). The same steady load
(4 clients, 20 ms pause) runs before each upgrade (that side's reference: `steady` requests on the settled
cluster) and through it (at least 5,000 requests from the apply on). raypilot's worker runs in a process of
its own (`worker.py`, deploy/'s RBAC), as KubeRay's operator runs in its pod: the load's clients share the
bench's event loop with neither controller.

Blue-green (KubeRay's NewCluster) switches the serve Service's selector, which moves only new connections,
so its clients open one connection per request (to the Service's clusterIP, through kube-proxy). The
incremental upgrade (NewClusterWithIncrementalUpgrade: step 20 %, interval 5 s, surge 50 %; then the same
with surge 100 %, the plan that starts the new cluster's replicas before any traffic moves) goes through
the Gateway, which picks a backend per request: two clients keep their connections alive and two open one per
request. KubeRay v1.5.0 runs it only with its alpha `RayServiceIncrementalUpgrade` gate on, which the bench's
stacks turn on; on a stack without it (the test process's, in the smoke) KubeRay's side says so instead.

`--smoke` runs the same code on the run's real stack of simulated Ray with a few requests, every upgrade at
once (`BenchContext.in_turn`), to check the bench itself.
"""

from __future__ import annotations

import time
import traceback
import uuid
from collections.abc import Awaitable, Callable

from bench.arithmetic import Figure, ratio
from bench.jobs_support import worker_process
from bench.rayservice_sides import INCREMENTAL_UPGRADE_GATE, SideKind, kuberay_gates
from bench.realkube_stack import real_ray_stack, shared_real_stack
from bench.suite import BenchContext
from bench.upgrades import Clients, Incremental, LoadStats, UpgradeRun, upgrade_under_load
from sandbox.realkube.node import RayKind
from tests.integration.stack import Stack

PLAN = Incremental(step_percent=20, interval_s=5, surge_percent=50)
# The plan a user chooses to keep replica starts away from live traffic: surge 100 % (the CRD's default) makes
# the new cluster start every replica before its first traffic step, as blue-green does, and the old one
# only stops replicas after. KubeRay's plan is what a manifest asks for; this one is a manifest's choice too.
WARM_PLAN = Incremental(step_percent=20, interval_s=5, surge_percent=100)
SMOKE_PLAN = Incremental(step_percent=50, interval_s=1, surge_percent=100)
MIN_REQUESTS = 5000
P99_TARGET = 1.5
BLUE_GREEN = Clients(per_request=4)
INCREMENTAL = Clients(keep_alive=2, per_request=2)
GATE_OFF = (
    f"KubeRay's {INCREMENTAL_UPGRADE_GATE} gate (alpha in v1.5.0, off by default) is off on this stack's "
    "operator, which then takes NewClusterWithIncrementalUpgrade for no zero-downtime upgrade at all"
)


def stats_text(stats: LoadStats) -> str:
    return (
        f"{stats.requests} requests, {stats.failed} failed; p50 {stats.p50_s * 1000:.1f} ms, "
        f"p99 {stats.p99_s * 1000:.1f} ms"
    )


def upgrade_text(run: UpgradeRun) -> str:
    return f"{stats_text(run.upgrade)} ({ratio(run.upgrade.p99_s, run.steady.p99_s):.2f}x its steady p99)"


def detail(kind: str, side: str, run: UpgradeRun) -> str:
    by_kind = "; ".join(f"{client}: {stats_text(upgrade)}" for client, (_, upgrade) in run.by_kind.items())
    return (
        f"{kind}, {side}: steady before {stats_text(run.steady)}; upgrade took {run.upgrade_s:.1f} s; "
        f"during it by client kind: {by_kind}"
    )


def plan_text(plan: Incremental) -> str:
    step, interval, surge = plan.step_percent, plan.interval_s, plan.surge_percent
    return f"incremental (step {step} %, interval {interval} s, surge {surge} %)"


def figure(kind: str, clients: Clients, ray: RayKind, ours: UpgradeRun, theirs: UpgradeRun | str) -> Figure:
    """raypilot's upgrade measured, KubeRay's from the same run as the reference, with their ratio."""
    measured = f"raypilot {upgrade_text(ours)}"
    notes = [detail(kind, "raypilot", ours)]
    if isinstance(theirs, UpgradeRun):
        reference = f"KubeRay {upgrade_text(theirs)}"
        measured += (
            f"; failed {ours.upgrade.failed} vs KubeRay's {theirs.upgrade.failed}, "
            f"p99 {ratio(ours.upgrade.p99_s, theirs.upgrade.p99_s):.2f}x KubeRay's"
        )
        notes.append(detail(kind, "KubeRay", theirs))
    else:
        reference = f"KubeRay not measured: {theirs}"
    p99_ratio = ratio(ours.upgrade.p99_s, ours.steady.p99_s)
    return Figure(
        "P6",
        f"{kind} upgrade under load ({clients.text()}), {ray} Ray Serve, beside KubeRay v1.5.0 (real stack)",
        measured,
        reference,
        "0 failed; p99 <= 1.5x steady",
        ours.upgrade.failed == 0 and p99_ratio <= P99_TARGET,
        notes,
    )


async def kuberay_upgrade(
    context: BenchContext, stack: Stack, plan: Incremental | None, clients: Clients, sizes: tuple[int, int]
) -> UpgradeRun | str:
    """KubeRay's run of the same upgrade; outside the smoke, a failure is reported in its row (raypilot's
    figures still stand) rather than failing the bench."""
    side: SideKind = "kuberay"
    steady, during = sizes
    try:
        return await upgrade_under_load(stack, plan, steady=steady, during=during, side=side, clients=clients)
    except Exception as error:
        if context.smoke:
            raise
        traceback.print_exc()
        return f"its run failed: {type(error).__name__}: {str(error)[:300]}"


async def run(context: BenchContext) -> list[Figure]:
    ray: RayKind = "simulated" if context.smoke else "real"
    plans = [SMOKE_PLAN] if context.smoke else [PLAN, WARM_PLAN]
    sizes = (10, 10) if context.smoke else (1000, MIN_REQUESTS)
    real = await (shared_real_stack(context) if context.smoke else real_ray_stack(context))
    figures = []
    task_queue = f"bench-p6-{uuid.uuid4().hex[:6]}"
    log_path = context.scratch("p6") / "worker.log"
    async with (
        worker_process(context.address, task_queue, real.worker_kubeconfig, log_path),
        real.admin_stack(context.client, task_queue) as stack,
    ):
        incremental_gate = INCREMENTAL_UPGRADE_GATE in kuberay_gates(stack)
        # raypilot first for blue-green, KubeRay first for incremental: neither side always meets the machine
        # as the other's run left it.
        blue_green, *incrementals = await context.in_turn(
            lambda: both_sides(context, stack, None, BLUE_GREEN, sizes, kuberay_first=False),
            *(incremental_sides(context, stack, plan, sizes, incremental_gate) for plan in plans),
        )
        figures.append(figure("blue-green", BLUE_GREEN, ray, *blue_green))
        for plan, incremental in zip(plans, incrementals, strict=True):
            figures.append(figure(plan_text(plan), INCREMENTAL, ray, *incremental))
    return figures


def incremental_sides(
    context: BenchContext, stack: Stack, plan: Incremental, sizes: tuple[int, int], kuberay_can: bool
) -> Callable[[], Awaitable[tuple[UpgradeRun, UpgradeRun | str]]]:
    return lambda: both_sides(
        context, stack, plan, INCREMENTAL, sizes, kuberay_first=True, kuberay_can=kuberay_can
    )


async def both_sides(
    context: BenchContext,
    stack: Stack,
    plan: Incremental | None,
    clients: Clients,
    sizes: tuple[int, int],
    *,
    kuberay_first: bool,
    kuberay_can: bool = True,
) -> tuple[UpgradeRun, UpgradeRun | str]:
    """The upgrade run by raypilot and by KubeRay (GATE_OFF where KubeRay cannot run it), one after the
    other (`context.in_turn`), each one's duration logged."""
    kind = plan_text(plan) if plan else "blue-green"

    async def kuberay() -> UpgradeRun | str:
        started = time.monotonic()
        run = await kuberay_upgrade(context, stack, plan, clients, sizes) if kuberay_can else GATE_OFF
        context.log(f"   P6 {kind}, KubeRay: {time.monotonic() - started:.0f} s")
        return run

    async def raypilot() -> UpgradeRun | str:
        started = time.monotonic()
        run = await upgrade_under_load(stack, plan, steady=sizes[0], during=sizes[1], clients=clients)
        context.log(f"   P6 {kind}, raypilot: {time.monotonic() - started:.0f} s")
        return run

    if kuberay_first:
        theirs, ours = await context.in_turn(kuberay, raypilot)
    else:
        ours, theirs = await context.in_turn(raypilot, kuberay)
    assert isinstance(ours, UpgradeRun), ours  # raypilot's side raises rather than reporting a failure
    return ours, theirs
