"""A smoke of every bench (tiny sizes, P6 on simulated Ray): the suite runs end to end and each bench yields
its figures. The figures themselves are not checked here: speed is measured by `make bench`, not by tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bench.arithmetic import Figure
from bench.suite import BENCHES, BenchContext, dev_server_address, run_benches

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(240)]

EXPECTED_ROWS = {"P1": 1, "P2": 1, "P2K": 3, "P3": 1, "P4": 6, "P5": 1, "P6": 2, "P7": 2, "P9": 1}


@pytest.mark.parametrize("bench_id", list(BENCHES))
async def test_bench_smoke(bench_id: str, dev_server_env: WorkflowEnvironment, tmp_path: Path) -> None:
    context = BenchContext(
        dev_server_env.client, dev_server_address(dev_server_env), tmp_path, smoke=True, log=lambda _: None
    )
    figures: list[Figure] = await run_benches(context, [bench_id])
    assert len(figures) == EXPECTED_ROWS[bench_id], figures
    assert all(row.id.startswith(bench_id) and row.measured and row.reference for row in figures), figures
    if bench_id == "P5":  # every process's CPU was found (the dev server's by its port)
        assert "?" not in figures[0].measured + figures[0].reference, figures
