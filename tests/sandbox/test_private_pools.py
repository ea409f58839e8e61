"""Private address pools of test sandboxes: pytest-xdist workers draw from disjoint ranges."""

from __future__ import annotations

import pytest

from sandbox.testing import private_second_octet


def octets(environ: dict[str, str], draws: int = 500) -> set[int]:
    return {private_second_octet(environ) for _ in range(draws)}


def test_without_xdist_the_whole_range_is_used() -> None:
    drawn = octets({})
    assert drawn <= set(range(100, 251))
    assert min(drawn) < 120
    assert max(drawn) > 230


@pytest.mark.parametrize("count", [2, 3, 4])
def test_each_worker_draws_from_its_own_share(count: int) -> None:
    shares = [
        octets({"PYTEST_XDIST_WORKER": f"gw{index}", "PYTEST_XDIST_WORKER_COUNT": str(count)})
        for index in range(count)
    ]
    for index, share in enumerate(shares):
        assert share <= set(range(100, 251)), share
        for other in shares[index + 1 :]:
            assert not share & other
