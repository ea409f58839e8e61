"""A smoke of every bench (tiny sizes, P6 on simulated Ray): the suite runs end to end and each bench yields
its figures. The figures themselves are not checked here: speed is measured by `make bench`, not by tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bench.arithmetic import Figure
from bench.realkube_stack import KEY as REAL_STACK_KEY
from bench.realkube_stack import SharedRealStack
from bench.suite import BENCHES, BenchContext, dev_server_address, run_benches
from tests.kubes import RealKube

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(240)]

EXPECTED_ROWS = {
    "P0": 1,
    "P1": 1,
    "P2": 1,
    "P2K": 4,
    "P3": 1,
    "P3K": 1,
    "P4": 6,
    "P5": 1,
    "P6": 2,
    "P7": 2,
    "P8": 1,
    "P9": 1,
    "P10": 3,
}
# The benches beside KubeRay share one real stack in a run (bench/realkube_stack.py): one smoke runs them.
BESIDE_KUBERAY = ("P2K", "P3K")
# Every bench that needs a Kubernetes runs on the real stack with simulated Ray: in a smoke, on the test
# process's (tests/conftest.py) rather than a stack of its own. P4 and P9 need none.
WITHOUT_KUBERNETES = ("P4", "P9")
# P6's smoke runs its three upgrades at once (BenchContext.in_turn), up to six simulated clusters where the
# others start one or two: 69 s at a load of 15-23, a wider limit than the module's for `make test`'s peaks.
P6_TIMEOUT_S = 480
# P7K's smoke (two clusters, a worker process, two windows and two sets of probe jobs) took 56 s on a quiet
# machine, about twice that under `make test`'s load, which is at its budget: `python -m bench --only P7K
# --smoke` runs it.
# P10's smoke (one worker process, then two, then two more and a kill whose jobs outlast the observer's
# 20 s heartbeat timeout) took 5 minutes on a loaded machine: `python -m bench --only P10 --smoke` runs it.
NOT_IN_MAKE_TEST = ("P7K", "P10")
SMOKES = [(bench_id,) for bench_id in BENCHES if bench_id not in BESIDE_KUBERAY + NOT_IN_MAKE_TEST] + [
    BESIDE_KUBERAY
]


def smoke_param(bench_ids: tuple[str, ...]) -> object:
    on_real_stack = not set(bench_ids) <= set(WITHOUT_KUBERNETES)
    marks = [pytest.mark.realkube] if on_real_stack else []
    if "P6" in bench_ids:
        marks.append(pytest.mark.timeout(P6_TIMEOUT_S))
    return pytest.param(bench_ids, id="+".join(bench_ids), marks=marks)


@pytest.mark.parametrize("bench_ids", [smoke_param(ids) for ids in SMOKES])
async def test_bench_smoke(
    bench_ids: tuple[str, ...],
    dev_server_env: WorkflowEnvironment,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    context = BenchContext(
        dev_server_env.client, dev_server_address(dev_server_env), tmp_path, smoke=True, log=lambda _: None
    )
    if not set(bench_ids) <= set(WITHOUT_KUBERNETES):
        real: RealKube = request.getfixturevalue("real_kube_of_simulated_ray")
        context.shared[REAL_STACK_KEY] = SharedRealStack(real.plane, real.installed)
    figures: list[Figure] = await run_benches(context, bench_ids)
    expected = [bench_id for bench_id in bench_ids for _ in range(EXPECTED_ROWS[bench_id])]
    assert len(figures) == len(expected), figures
    assert all(row.id.startswith(bench_id) for row, bench_id in zip(figures, expected, strict=True)), figures
    assert all(row.measured and row.reference for row in figures), figures
    if bench_ids == ("P5",):  # every process's CPU was found (the dev server's by its port)
        assert "?" not in figures[0].measured + figures[0].reference, figures
