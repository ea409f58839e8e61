"""P6: latency and failed requests during blue-green and incremental upgrades on real Ray Serve.

On the sandbox with real Ray heads (two at most at a time), the same steady load (4 clients, 20 ms pause)
runs before each upgrade (the reference: `steady` requests on the settled cluster) and through it (at least
5,000 requests from the apply on). Blue-green sends one connection per request (a Service's selector switch
only moves new connections); the incremental upgrade keeps connections alive through the Gateway. Incremental
plan: step 20 %, interval 5 s, surge 50 %.

`--smoke` runs the same code on the simulated sandbox with a few requests, to check the bench itself.
"""

from __future__ import annotations

from bench.arithmetic import Figure, ratio
from bench.suite import BenchContext
from bench.upgrades import Incremental, UpgradeRun, upgrade_under_load
from sandbox.cluster import RayMode
from tests.integration.stack import running_stack

PLAN = Incremental(step_percent=20, interval_s=5, surge_percent=50)
SMOKE_PLAN = Incremental(step_percent=50, interval_s=1, surge_percent=100)
MIN_REQUESTS = 5000
P99_TARGET = 1.5


def figure(kind: str, run: UpgradeRun, ray: RayMode) -> Figure:
    steady, upgrade = run.steady, run.upgrade
    p99_ratio = ratio(upgrade.p99_s, steady.p99_s)
    return Figure(
        "P6",
        f"{kind} upgrade under load, {ray} Ray Serve",
        f"{upgrade.requests} requests, {upgrade.failed} failed; p50 {upgrade.p50_s * 1000:.1f} ms, "
        f"p99 {upgrade.p99_s * 1000:.1f} ms ({p99_ratio:.2f}x steady)",
        f"steady before: {steady.requests} requests, {steady.failed} failed; "
        f"p50 {steady.p50_s * 1000:.1f} ms, p99 {steady.p99_s * 1000:.1f} ms",
        "0 failed; p99 <= 1.5x steady",
        upgrade.failed == 0 and p99_ratio <= P99_TARGET,
        [f"{kind}: upgrade took {run.upgrade_s:.1f} s"],
    )


async def run(context: BenchContext) -> list[Figure]:
    ray: RayMode = "simulated" if context.smoke else "real"
    plan = SMOKE_PLAN if context.smoke else PLAN
    steady, during = (10, 10) if context.smoke else (1000, MIN_REQUESTS)
    figures = []
    async with running_stack(context.scratch("p6-sandbox"), context.client, ray) as stack:
        blue_green = await upgrade_under_load(stack, None, steady=steady, during=during)
        figures.append(figure("blue-green", blue_green, ray))
        incremental = await upgrade_under_load(stack, plan, steady=steady, during=during)
        figures.append(figure("incremental", incremental, ray))
    return figures
