"""A loopback address pool: the Gateways' addresses.

On Linux all of 127.0.0.0/8 is loopback, so every address handed out here can be bound directly.
"""

from __future__ import annotations

import ipaddress
import random

GATEWAY_CIDR = "127.0.2.0/24"


class PoolExhausted(RuntimeError):
    """Every address of the pool is in use."""


class AddressPool:
    """Hands out the host addresses of a CIDR (network and broadcast excluded).

    Allocation walks round the range from the last address handed out, so a released address is reused as
    late as possible (a proxy of a deleted Service may still be closing its listener). The walk starts at
    `start` (an index into the range); `gateway_pool` picks it at random, so two sandboxes on one machine
    (a demo and a test run) rarely hand out the same address and port.
    """

    def __init__(self, cidr: str, start: int = 0) -> None:
        self.network = ipaddress.IPv4Network(cidr)
        self._free = [str(host) for host in self.network.hosts()]
        self._in_use: set[str] = set()
        self._cursor = start % len(self._free)

    def allocate(self) -> str:
        for step in range(len(self._free)):
            index = (self._cursor + step) % len(self._free)
            address = self._free[index]
            if address not in self._in_use:
                self._in_use.add(address)
                self._cursor = index + 1
                return address
        raise PoolExhausted(f"no free address left in {self.network}")

    def reserve(self, address: str) -> None:
        """Mark a specific address as used (a Service created with an explicit clusterIP)."""
        if not self.contains(address):
            raise ValueError(f"{address} is not in the range {self.network}")
        if address in self._in_use:
            raise ValueError(f"{address} is already allocated")
        self._in_use.add(address)

    def release(self, address: str) -> None:
        self._in_use.discard(address)

    def contains(self, address: str) -> bool:
        try:
            host = ipaddress.IPv4Address(address)
        except ValueError:
            return False
        return host in self.network and host not in (
            self.network.network_address,
            self.network.broadcast_address,
        )

    def in_use(self, address: str) -> bool:
        return address in self._in_use

    @property
    def allocated(self) -> frozenset[str]:
        return frozenset(self._in_use)


def gateway_pool(rand: random.Random | None = None) -> AddressPool:
    """The Gateways' addresses, the walk starting at a random place of the range."""
    return AddressPool(GATEWAY_CIDR, start=(rand or random.Random()).randrange(2**16))
