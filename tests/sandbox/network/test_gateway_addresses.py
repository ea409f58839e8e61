"""The Gateway controller's addresses on a machine it shares: two sandboxes (two test processes' stacks, a
demo beside a test run) draw Gateway addresses from the same range, so one may find its address's port held by
the other. A Gateway no client has reached yet moves to another address instead of waiting for the holder."""

from __future__ import annotations

import socket
from typing import Any

from sandbox.gateway.controller import GatewayController
from sandbox.gateway.routes import GATEWAY_API_VERSION
from sandbox.netalloc import AddressPool
from tests.sandbox.network.objects import Objects

Obj = dict[str, Any]
# A range of its own (hosts .1 to .6); the pool's walk starts at .1.
RANGE = "127.77.2.0/29"


def gateway(port: int) -> Obj:
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": "default", "generation": 1},
        "spec": {
            "gatewayClassName": "sandbox",
            "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
        },
    }


def programmed(gateway: Obj) -> str | None:
    for condition in (gateway.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Programmed":
            return str(condition["status"])
    return None


async def test_a_gateway_whose_address_another_process_holds_moves_to_a_free_one() -> None:
    with socket.socket() as holder:  # what another sandbox's listener would be
        holder.bind(("127.77.2.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        objects = Objects(gateway(port))
        controller = GatewayController(objects, AddressPool(RANGE))
        try:
            await controller.reconcile()
            assert controller.listen_address("default", "gw", port) is None
            assert controller.retry_soon  # the pass that found the address taken asks for another
            await controller.reconcile()
            assert controller.listen_address("default", "gw", port) == ("127.77.2.2", port)
            assert objects.one("Gateway", "gw")["status"]["addresses"] == [
                {"type": "IPAddress", "value": "127.77.2.2"}
            ]
            assert programmed(objects.one("Gateway", "gw")) == "True"
        finally:
            await controller.shutdown()
