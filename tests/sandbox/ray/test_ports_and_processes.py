"""Free ports and stopping process trees by session."""

from __future__ import annotations

import asyncio
import socket
import sys
import time

import pytest

from sandbox.ray.ports import (
    is_port_free,
    port_window,
    release_ports,
    reserve_port_block,
    reserve_ports,
    reserved_ports,
)
from sandbox.ray.processes import pss_bytes, rss_bytes, session_members, stop_session


def test_reserved_ports_are_distinct_free_and_outside_the_ephemeral_range() -> None:
    ports = reserve_ports(20)
    try:
        assert len(set(ports)) == 20
        assert all(port in port_window() for port in ports)
        assert all(is_port_free(port) for port in ports)
        assert set(ports) <= reserved_ports()
    finally:
        release_ports(ports)
    assert not set(ports) & reserved_ports()


def test_a_port_block_is_contiguous_and_never_overlaps_reserved_ports() -> None:
    first = reserve_port_block(50)
    second = reserve_port_block(50)
    try:
        assert list(first) == list(range(first.start, first.start + 50))
        assert not set(first) & set(second)
    finally:
        release_ports([*first, *second])


def test_a_bound_port_is_not_free() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert not is_port_free(listener.getsockname()[1])


async def _wait_for(condition: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


# A child that moves to its own process group (as Ray's raylet does with workers) and ignores SIGTERM.
STUBBORN_CHILD = (
    "import os, signal, time; os.setpgid(0, 0); signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


async def test_stop_session_kills_processes_that_left_the_group_and_ignore_sigterm() -> None:
    leader = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        f'{sys.executable} -c "{STUBBORN_CHILD}" & sleep 60',
        start_new_session=True,
        stdout=asyncio.subprocess.PIPE,
    )
    assert leader.stdout is not None
    assert (await asyncio.wait_for(leader.stdout.readline(), 10)).strip() == b"ready"
    members = session_members(leader.pid)
    assert leader.pid in members
    assert len(members) == 3  # sh, the python child, sleep
    assert rss_bytes(members) > 0
    assert 0 < pss_bytes(members) <= rss_bytes(members)

    started = time.monotonic()
    await stop_session(leader.pid, grace_s=0.3)
    assert time.monotonic() - started < 5
    await asyncio.wait_for(leader.wait(), 5)
    await _wait_for(lambda: not session_members(leader.pid))


@pytest.mark.parametrize("session_id", [999_999_999])
def test_an_unknown_session_has_no_members(session_id: int) -> None:
    assert session_members(session_id) == []
