"""Private address pools of test sandboxes: pytest-xdist workers draw from disjoint ranges."""

from __future__ import annotations

import socket

import pytest

import sandbox.testing
from sandbox.testing import listening_loopback_octets, private_second_octet


def octets(environ: dict[str, str], draws: int = 500) -> set[int]:
    return {private_second_octet(environ, busy=set) for _ in range(draws)}


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


def test_an_octet_something_listens_in_is_never_drawn() -> None:
    share = {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"}  # 175-249
    all_but_one = set(range(100, 251)) - {201}
    assert {private_second_octet(share, busy=lambda: all_but_one) for _ in range(20)} == {201}


def test_consecutive_sandboxes_of_one_process_get_different_octets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.testing, "_drawn_octets", set())  # as in a process that drew none yet
    share = {"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "3"}  # 50 octets
    drawn = [private_second_octet(share, busy=set) for _ in range(10)]
    assert len(set(drawn)) == 10, drawn


def test_a_listener_on_a_loopback_address_is_seen_with_its_octet() -> None:
    octet = 187
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind((f"127.{octet}.1.5", 0))
        listener.listen()
        assert octet in listening_loopback_octets()
