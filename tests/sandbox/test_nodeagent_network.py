"""The node agent's network (sandbox/nodeagent/network.py) on this machine: a pod namespace gets an address
the node reaches, and what an agent killed without cleaning up left behind is reclaimed by the next one."""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

import pytest

from sandbox.nodeagent.network import OWNERS, NodeNetwork

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

# Far from the indexes the node agents of other tests claim first.
INDEXES = range(200, 256)


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_pod_namespace_is_reachable_and_an_abandoned_network_is_reclaimed() -> None:
    node = NodeNetwork.claim(INDEXES)
    try:
        pod = node.attach("pod-a")
        assert ipaddress.IPv4Address(pod.ip) in node.network
        inside = ["ip", "netns", "exec", pod.netns]
        shown = subprocess.run(
            [*inside, "ip", "-4", "addr", "show", "eth0"], capture_output=True, text=True, check=True
        )
        assert f"{pod.ip}/24" in shown.stdout
        connect = f"import socket; socket.create_connection(('{node.node_ip}', 9), 2)"
        reached = subprocess.run(
            [*inside, "python3", "-c", connect], capture_output=True, text=True, check=False
        )
        assert "refused" in reached.stderr  # the node answered (nothing listens on port 9): the route works
        # As if the agent had been killed: its PID is gone, its namespaces and veths are still there.
        (OWNERS / f"rp{node.index}").write_text(str(dead_pid()))
        again = NodeNetwork.claim([node.index])
        assert again.index == node.index
        assert not Path(f"/run/netns/{pod.netns}").exists()
        again.close()
        assert not Path(f"/run/netns/{node.netns}").exists()
        assert not Path(f"/sys/class/net/{node.host_veth}").exists()
    finally:
        node.pods.clear()
        node.close()
