"""Free TCP ports for local Ray heads and simulated dashboards.

Several heads (and several test sessions of other people) share this machine, so ports are picked at random
from a window *below* the kernel's ephemeral range: the kernel never hands those out as client ports, so a
port that is free when we check it stays free until the process we start binds it. Ports handed out by this
process are remembered until released, so two heads started by the same sandbox never get the same port.
"""

from __future__ import annotations

import random
import socket
import threading
from collections.abc import Iterable
from pathlib import Path

_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_PORT = 15000
_MIN_WINDOW = 2000
_ATTEMPTS = 500

_reserved: set[int] = set()
_lock = threading.Lock()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = _EPHEMERAL_RANGE_FILE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux default


def port_window() -> range:
    """The ports this module picks from: below the ephemeral range if there is room, else above it."""
    low, high = _ephemeral_range()
    if low - _LOWEST_PORT >= _MIN_WINDOW:
        return range(_LOWEST_PORT, low)
    return range(high + 1, 65536)


def is_port_free(port: int) -> bool:
    """True if nothing on this machine is bound to `port` (checked on the wildcard address).

    The wildcard check is deliberate: Ray's GCS binds `*:port`, which conflicts with a listener on any
    loopback address. Binding without listening sends no traffic.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def reserve_ports(count: int) -> list[int]:
    """`count` distinct free ports, each reserved for this process until `release_ports`."""
    return [reserve_port_block(1)[0] for _ in range(count)]


def reserve_port_block(size: int) -> range:
    """A contiguous block of `size` free ports (e.g. Ray's worker port range), reserved until released."""
    window = port_window()
    if size < 1 or size > len(window):
        raise ValueError(f"cannot reserve a block of {size} ports from {window}")
    with _lock:
        for _ in range(_ATTEMPTS):
            start = random.randrange(window.start, window.stop - size + 1)
            block = range(start, start + size)
            if any(p in _reserved for p in block):
                continue
            if all(is_port_free(p) for p in block):
                _reserved.update(block)
                return block
    raise RuntimeError(f"no block of {size} free ports found in {window}")


def claim_ports(ports: Iterable[int]) -> None:
    """Mark ports as held again (a head started anew after `stop` keeps its earlier ports)."""
    with _lock:
        _reserved.update(ports)


def release_ports(ports: Iterable[int]) -> None:
    """Give ports back (after the process that used them is gone)."""
    with _lock:
        _reserved.difference_update(ports)


def reserved_ports() -> frozenset[int]:
    """The ports this process currently holds (for tests and diagnostics)."""
    with _lock:
        return frozenset(_reserved)
