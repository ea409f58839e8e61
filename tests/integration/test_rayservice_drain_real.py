"""Drained deletion on real Ray Serve on the real stack (`-m ray`): the checks of
test_rayservice_drain_simulated.py on real heads, reading the real Serve proxies'
`ray_serve_num_ongoing_http_requests` gauge, with busy clients on kept-alive connections (through kube-proxy,
or the Gateway for the incremental check) that the old cluster's real proxies close after their responses
(activities/serve_connections.py), and clients opening a connection per request: none fails."""

from __future__ import annotations

import pytest

from tests.integration.drain_checks import check_drained_deletion, check_incremental_drained_deletion
from tests.integration.stack import Stack

pytestmark = [pytest.mark.ray, pytest.mark.devserver, pytest.mark.timeout(1200)]


async def test_long_requests_finish_on_the_old_real_cluster_before_it_is_deleted(
    real_ray_kube_stack: Stack,
) -> None:
    # A real head starts in ~7 s on an idle machine, in minutes beside other heads on 2 busy cores.
    run = await check_drained_deletion(real_ray_kube_stack, within=480)
    print(
        f"drain (real Ray): long requests answered {run.answered_after_switch_s:.1f} s after the switch, old "
        f"cluster gone {run.gone_after_switch_s:.1f} s after it; {run.kept_alive_requests} kept-alive and "
        f"{run.per_connection_requests} one-connection requests, none failed"
    )


async def test_incremental_long_requests_finish_on_the_old_real_cluster(real_ray_kube_stack: Stack) -> None:
    run = await check_incremental_drained_deletion(real_ray_kube_stack, within=480)
    print(
        f"drain (real Ray, incremental): long requests answered {run.answered_after_switch_s:.1f} s after "
        f"the switch, old cluster gone {run.gone_after_switch_s:.1f} s after it; {run.kept_alive_requests} "
        f"kept-alive and {run.per_connection_requests} one-connection requests, none failed"
    )
