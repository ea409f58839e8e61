"""Drained deletion with simulated Ray on the real stack (its clients go through kube-proxy),
with the real worker (tests/integration/drain_checks.py): requests longer than rayClusterDeletionDelaySeconds
are still answered by the old cluster after a blue-green switch, which goes only once they are done; an idle
kept-alive connection reconnects to the new cluster, and busy clients (kept-alive, moved by the old proxies'
`Connection: close`, or one connection per request) lose nothing. The incremental check runs on real Ray only
(test_rayservice_incremental.py: the time budget). (Without the annotation such requests are cut off when the
old cluster goes: bench/rayservice_drain.py.)"""

from __future__ import annotations

import pytest

from tests.integration.drain_checks import check_drained_deletion
from tests.integration.stack import Stack

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(300)]


async def test_long_requests_finish_on_the_old_cluster_before_it_is_deleted(kube_stack: Stack) -> None:
    run = await check_drained_deletion(kube_stack, within=120)
    print(  # visible with -s: what the run measured
        f"drain: long requests answered {run.answered_after_switch_s:.1f} s after the switch, old cluster "
        f"gone {run.gone_after_switch_s:.1f} s after it"
    )
