"""P1: how exactly an incremental upgrade's traffic steps keep `intervalSeconds`, in workflow time (when
each HTTPRoute update was scheduled, from the history) and in wall time (the HTTPRoute's weight changes as
a 50 ms poll of the API saw them).

On the real stack with simulated Ray (bench/realkube_stack.py; fast timings), v1 -> v2 with maxSurgePercent
100 (the new cluster gets all its capacity first, so every traffic step waits only for its timer),
stepSizePercent 20, intervalSeconds 3, under a steady load through the Gateway (the sandbox's Gateway
controller on the real stack). Error of a step = its gap to the previous step - intervalSeconds.

Reference, same run: KubeRay's model, where a step due after intervalSeconds happens at the next 2 s
reconcile tick (best case, ticks phased on the previous step): bench.arithmetic.kuberay_step_errors.
"""

from __future__ import annotations

from bench.arithmetic import KUBERAY_RAYSERVICE_TICK_S, Figure, kuberay_step_errors
from bench.realkube_stack import shared_real_stack
from bench.suite import BenchContext
from bench.upgrades import Incremental, upgrade_under_load

PLAN = Incremental(step_percent=20, interval_s=3, surge_percent=100)
SMOKE_PLAN = Incremental(step_percent=50, interval_s=1, surge_percent=100)
WORKFLOW_TARGET_S = 0.1
WALL_TARGET_S = 0.5


def errors(gaps: list[float], interval_s: float) -> list[float]:
    return [gap - interval_s for gap in gaps]


async def run(context: BenchContext) -> list[Figure]:
    plan = SMOKE_PLAN if context.smoke else PLAN
    steady, during = (20, 20) if context.smoke else (300, 1500)
    real = await shared_real_stack(context)
    async with real.stack_with_worker(context.client) as stack:
        upgrade = await upgrade_under_load(stack, plan, steady=steady, during=during)
    workflow_errors = errors(upgrade.workflow_gaps(), plan.interval_s)
    wall_errors = errors(upgrade.route_gaps(), plan.interval_s)
    if not workflow_errors or not wall_errors:
        raise RuntimeError(f"no traffic steps seen: {upgrade}")
    kuberay = kuberay_step_errors(len(upgrade.workflow_steps), plan.interval_s, KUBERAY_RAYSERVICE_TICK_S)
    worst_workflow = max(abs(error) for error in workflow_errors)
    worst_wall = max(abs(error) for error in wall_errors)
    steps = "/".join(str(percent) for _, percent in upgrade.workflow_steps)
    return [
        Figure(
            "P1",
            f"incremental upgrade, steps {steps} %, interval {plan.interval_s} s: error per step",
            f"workflow time worst {worst_workflow:.3f} s "
            f"({', '.join(f'{e:+.3f}' for e in workflow_errors)}); wall (route) worst {worst_wall:.3f} s "
            f"({', '.join(f'{e:+.2f}' for e in wall_errors)})",
            f"KubeRay model (2 s ticks): {', '.join(f'{e:+.1f}' for e in kuberay)} s",
            "<= 0.1 s workflow time, <= 0.5 s wall",
            worst_workflow <= WORKFLOW_TARGET_S and worst_wall <= WALL_TARGET_S,
            [
                f"upgrade {upgrade.upgrade_s:.1f} s; load {upgrade.upgrade.requests} requests during it, "
                f"{upgrade.upgrade.failed} failed"
            ],
        )
    ]
