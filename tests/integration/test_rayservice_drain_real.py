"""Drained deletion on real Ray Serve (opt-in, `-m ray`): the check of test_rayservice_drain_simulated.py on
real heads, reading the real Serve proxies' `ray_serve_num_ongoing_http_requests` gauge."""

from __future__ import annotations

import pytest

from tests.integration.drain_checks import check_drained_deletion
from tests.integration.stack import Stack

pytestmark = [pytest.mark.ray, pytest.mark.devserver, pytest.mark.timeout(1200)]


async def test_long_requests_finish_on_the_old_real_cluster_before_it_is_deleted(real_stack: Stack) -> None:
    # A real head starts in ~7 s on an idle machine, in minutes beside other heads on 2 busy cores.
    run = await check_drained_deletion(real_stack, within=480)
    print(
        f"drain (real Ray): long requests answered {run.answered_after_switch_s:.1f} s after the switch, old "
        f"cluster gone {run.gone_after_switch_s:.1f} s after it"
    )
