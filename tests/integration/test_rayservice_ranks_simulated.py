"""Replica ranks through target_capacity 50 -> 100 -> 50 with simulated Ray on the real stack: the same path
as on real Ray (the simulated dashboard, like Ray 2.60's, reports no ranks; its Jobs API answers the ranks
driver)."""

from __future__ import annotations

import pytest

from tests.integration.rayservice_helpers import check_ranks_through_target_capacities
from tests.integration.stack import Stack

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(400)]


async def test_replica_ranks_are_contiguous_once_settled_at_each_target_capacity(
    kube_stack: Stack,
) -> None:
    await check_ranks_through_target_capacities(kube_stack, within=120)
