"""RayService on real Ray heads on the real stack: a NewCluster blue-green upgrade v1 -> v2 with drained
deletion (tests/integration/drain_checks.py on real heads, reading the real Serve proxies'
`ray_serve_num_ongoing_http_requests` gauge): served through the API server's Service proxy and the serve
Service's clusterIP, busy clients on kept-alive connections (through kube-proxy, moved by the old cluster's
real proxies closing them after their responses, activities/serve_connections.py) and on a connection per
request, long requests answered by the old cluster before it is deleted: none fails. Then Serve replica
ranks in the status while target_capacity moves 50 -> 100 -> 50.

The blue-green test costs two heads (old and new cluster), the ranks test one more.
"""

from __future__ import annotations

import pytest

from tests.integration.drain_checks import check_drained_deletion
from tests.integration.rayservice_helpers import check_ranks_through_target_capacities
from tests.integration.stack import Stack

pytestmark = [pytest.mark.ray, pytest.mark.devserver, pytest.mark.timeout(900)]


async def test_blue_green_upgrade_under_load_loses_no_request(real_ray_kube_stack: Stack) -> None:
    # A real head starts in ~7 s on an idle machine, in minutes beside other heads on 2 busy cores.
    run = await check_drained_deletion(real_ray_kube_stack, within=480)
    print(  # visible with -s: what the run measured
        f"blue-green (real Ray): long requests answered {run.answered_after_switch_s:.1f} s after the "
        f"switch, old cluster gone {run.gone_after_switch_s:.1f} s after it; {run.kept_alive_requests} "
        f"kept-alive and {run.per_connection_requests} one-connection requests, none failed"
    )


async def test_replica_ranks_are_contiguous_once_settled_at_each_target_capacity(
    real_ray_kube_stack: Stack,
) -> None:
    await check_ranks_through_target_capacities(real_ray_kube_stack, within=240)
