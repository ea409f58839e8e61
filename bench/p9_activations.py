"""P9: the slowest workflow activation of three lifecycles, beside Temporal's 2 s deadlock limit.

An activation is one call of a workflow's code by the worker (the events of one workflow task applied, the
workflow run until it waits again). Temporal fails an activation that has not yielded within 2 s, and the
worker holds the GIL for all of it, so every activation must be short by construction, not by luck.

Measured by replaying committed histories (tests/replay/histories: the same workflow code, activation by
activation, as a live run) with a runner that times each activation's wall and thread CPU time, twice: with
the worker's pass-through runner (raypilot/workflow_runner.py) and in Temporal's full sandbox (the tests'
workers and the replay tests). Three lifecycles: a RayJob (submitted, run, cluster deleted), a RayService's
first deployment, and an incremental upgrade through three specs.

Reference: the 2,000 ms limit itself. Target: the slowest activation at most 5 % of it (100 ms), which
leaves a 20-fold margin for a starved or CPU-throttled worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer, WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from bench.arithmetic import Figure
from bench.suite import BenchContext
from raypilot.converter import raypilot_data_converter
from raypilot.workflow_runner import workflow_runner

HISTORIES = Path(__file__).parents[1] / "tests" / "replay" / "histories"
LIFECYCLES = {
    "RayJob": "rayjob_k8s_observer",
    "RayService first deployment": "rayservice_blue_green_delete",
    "incremental upgrade": "rayservice_incremental_third_spec",
}
DEADLOCK_LIMIT_MS = 2000.0
TARGET_SHARE = 0.05
ROUNDS = 3  # replays of each history per runner; the slowest activation of all rounds counts
SMOKE_ROUNDS = 1  # the smoke checks that each history replays under both runners, once is enough


@dataclass(frozen=True)
class Activation:
    wall_ms: float
    cpu_ms: float


@dataclass
class TimedRunner(WorkflowRunner):
    """Runs workflows with `inner` and records every activation's wall and thread CPU time."""

    inner: WorkflowRunner
    activations: list[Activation] = field(default_factory=list)

    def prepare_workflow(self, defn: Any) -> None:
        self.inner.prepare_workflow(defn)

    def set_worker_level_failure_exception_types(self, types: Sequence[type[BaseException]]) -> None:
        self.inner.set_worker_level_failure_exception_types(types)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        instance = self.inner.create_instance(det)
        activate = instance.activate
        record = self.activations.append

        def timed(act: WorkflowActivation) -> WorkflowActivationCompletion:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return activate(act)
            finally:
                record(Activation((time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000))

        instance.activate = timed  # type: ignore[method-assign]
        return instance


async def slowest_activation(
    history_name: str, make_runner: Callable[[], WorkflowRunner], rounds: int
) -> Activation:
    from workflows.registry import WORKFLOWS

    history = WorkflowHistory.from_json(history_name, (HISTORIES / f"{history_name}.json").read_text())
    runner = TimedRunner(make_runner())
    for _ in range(rounds):
        replayer = Replayer(
            workflows=list(WORKFLOWS), data_converter=raypilot_data_converter, workflow_runner=runner
        )
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        if result.replay_failure is not None:
            raise RuntimeError(f"{history_name} no longer replays: {result.replay_failure}")
    return max(runner.activations, key=lambda activation: activation.wall_ms)


RUNNERS: dict[str, Callable[[], WorkflowRunner]] = {
    "worker": workflow_runner,
    "sandbox": SandboxedWorkflowRunner,
}


async def run(context: BenchContext) -> list[Figure]:
    rounds = SMOKE_ROUNDS if context.smoke else ROUNDS
    slowest: dict[tuple[str, str], Activation] = {}
    for runner_name, make_runner in RUNNERS.items():
        for lifecycle, history_name in LIFECYCLES.items():
            slowest[lifecycle, runner_name] = await slowest_activation(history_name, make_runner, rounds)
    worst = max(activation.wall_ms for activation in slowest.values())

    def described(runner_name: str) -> str:
        parts = []
        for lifecycle in LIFECYCLES:
            activation = slowest[lifecycle, runner_name]
            share = activation.wall_ms / DEADLOCK_LIMIT_MS
            parts.append(
                f"{lifecycle} {activation.wall_ms:.1f} ms ({activation.cpu_ms:.1f} CPU; {share:.4f} of limit)"
            )
        return "; ".join(parts)

    return [
        Figure(
            "P9",
            "slowest workflow activation (wall ms, replayed lifecycles)",
            f"worker's runner: {described('worker')}. Full sandbox: {described('sandbox')}",
            f"Temporal's deadlock limit {DEADLOCK_LIMIT_MS:,.0f} ms",
            f"<= {TARGET_SHARE:.0%} of the limit ({DEADLOCK_LIMIT_MS * TARGET_SHARE:.0f} ms)",
            worst <= DEADLOCK_LIMIT_MS * TARGET_SHARE,
        )
    ]
