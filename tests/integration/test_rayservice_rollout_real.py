"""raypilot.io/rollout's automatic rollback of a failing v2 and fast undo on real Ray Serve, blue-green under
steady load (tests/integration/rollback_checks.py), opt-in with `RAYPILOT_REAL_ROLLBACK=1`: three real heads,
minutes on a busy machine (bench/RESULTS.md has its figures). `make test` runs the same check with simulated
Ray on the real stack (test_rayservice_rollout_simulated.py)."""

from __future__ import annotations

import os

import pytest

from tests.integration.rollback_checks import assert_rolled_back_and_undone_in_place, check_rollback_and_undo
from tests.integration.stack import Stack


@pytest.mark.ray
@pytest.mark.devserver
@pytest.mark.timeout(1500)
@pytest.mark.skipif(
    os.environ.get("RAYPILOT_REAL_ROLLBACK") != "1",
    reason="three real Ray heads (minutes): opt-in with RAYPILOT_REAL_ROLLBACK=1",
)
async def test_failing_v2_rolled_back_and_undo_restores_v1_real_ray(real_ray_kube_stack: Stack) -> None:
    # A real head starts in ~7 s on an idle machine, in minutes beside other heads on 2 busy cores.
    run = await check_rollback_and_undo(real_ray_kube_stack, within=480)
    assert_rolled_back_and_undone_in_place(run)
    print(f"rollback/undo (real Ray): {run} load {os.getloadavg()}")
