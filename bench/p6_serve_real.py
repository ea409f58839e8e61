"""P6: latency and failed requests during blue-green and incremental upgrades on real Ray Serve.

On the real stack whose pods run real Ray (bench/realkube_stack.py's `real_ray_stack`: KubeRay's operator
makes the heads' Pods, the node agent runs real Ray nodes in them; two clusters at most at a time), the same
steady load (4 clients, 20 ms pause) runs before each upgrade (the reference: `steady` requests on the settled
cluster) and through it (at least 5,000 requests from the apply on). Blue-green sends one connection per
request (a Service's selector switch only moves new connections; clients reach its clusterIP through
kube-proxy); the incremental upgrade keeps connections alive through the Gateway. Incremental plan: step 20 %,
interval 5 s, surge 50 %.

`--smoke` runs the same code on the run's real stack of simulated Ray with a few requests, to check the bench
itself.
"""

from __future__ import annotations

from bench.arithmetic import Figure, ratio
from bench.realkube_stack import real_ray_stack, shared_real_stack
from bench.suite import BenchContext
from bench.upgrades import Incremental, UpgradeRun, upgrade_under_load
from sandbox.realkube.node import RayKind

PLAN = Incremental(step_percent=20, interval_s=5, surge_percent=50)
SMOKE_PLAN = Incremental(step_percent=50, interval_s=1, surge_percent=100)
MIN_REQUESTS = 5000
P99_TARGET = 1.5


def figure(kind: str, run: UpgradeRun, ray: RayKind) -> Figure:
    steady, upgrade = run.steady, run.upgrade
    p99_ratio = ratio(upgrade.p99_s, steady.p99_s)
    return Figure(
        "P6",
        f"{kind} upgrade under load, {ray} Ray Serve (real stack)",
        f"{upgrade.requests} requests, {upgrade.failed} failed; p50 {upgrade.p50_s * 1000:.1f} ms, "
        f"p99 {upgrade.p99_s * 1000:.1f} ms ({p99_ratio:.2f}x steady)",
        f"steady before: {steady.requests} requests, {steady.failed} failed; "
        f"p50 {steady.p50_s * 1000:.1f} ms, p99 {steady.p99_s * 1000:.1f} ms",
        "0 failed; p99 <= 1.5x steady",
        upgrade.failed == 0 and p99_ratio <= P99_TARGET,
        [f"{kind}: upgrade took {run.upgrade_s:.1f} s"],
    )


async def run(context: BenchContext) -> list[Figure]:
    ray: RayKind = "simulated" if context.smoke else "real"
    plan = SMOKE_PLAN if context.smoke else PLAN
    steady, during = (10, 10) if context.smoke else (1000, MIN_REQUESTS)
    figures = []
    real = await (shared_real_stack(context) if context.smoke else real_ray_stack(context))
    async with real.stack_with_worker(context.client) as stack:
        blue_green = await upgrade_under_load(stack, None, steady=steady, during=during)
        figures.append(figure("blue-green", blue_green, ray))
        incremental = await upgrade_under_load(stack, plan, steady=steady, during=during)
        figures.append(figure("incremental", incremental, ray))
    return figures
