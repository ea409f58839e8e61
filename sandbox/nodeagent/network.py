"""The node's pod network: a bridge on the host with the node's address, and a network namespace per pod with
a veth pair into the bridge and an address of the node's /24. The API server proxies to those addresses (it
refuses loopback ones), pods reach each other and the node over the bridge, and each pod has all its ports to
itself as in a real pod.

Names resolve through per-namespace files that `ip netns exec` mounts over /etc: `hosts` (the pod itself and
every Service, see `hosts_file`) and a `resolv.conf` with no reachable server, so any other name fails at once
instead of waiting on a resolver the pod cannot reach.

Every interface and namespace name starts with `rp<index>`: the bridge `rp<index>br`, pod namespaces
`rp<index>p<n>`, veths `rp<index>v<n>`. The index is claimed by creating the bridge (the kernel refuses a
second interface of the same name), so several agents on one machine never share a range. The claiming
process writes its PID to `OWNERS/rp<index>`; an index whose owner is gone (an agent killed with SIGKILL) is
cleaned up (its namespaces, veths and bridge removed) and claimed again.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.controllers.raycluster_head import process_alive

__all__ = ["NetworkError", "NodeNetwork", "PodNetwork", "hosts_file", "service_names"]

# 10.200.0.0/16: one /24 per node agent; the service range of the control plane (10.0.0.0/24) stays apart.
BASE = ipaddress.IPv4Network("10.200.0.0/16")
NETNS_ETC = Path("/etc/netns")
OWNERS = Path("/run/raypilot-nodeagent")
RESOLV_CONF = (
    "# raypilot node agent: names outside the cluster do not resolve in pods\noptions timeout:1 attempts:1\n"
)
CLUSTER_DOMAIN = "cluster.local"


class NetworkError(RuntimeError):
    """An `ip` command failed (the message names it and gives its error)."""


def _ip(*argv: str, check: bool = True) -> bool:
    done = subprocess.run(["ip", *argv], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NetworkError(f"ip {' '.join(argv)}: {done.stderr.strip()}")
    return done.returncode == 0


def service_names(name: str, namespace: str, pod_namespace: str) -> list[str]:
    """The names a pod in `pod_namespace` reaches a Service by (the short name only in its own namespace)."""
    names = [f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}", f"{name}.{namespace}.svc", f"{name}.{namespace}"]
    return [*names, name] if namespace == pod_namespace else names


def hosts_file(
    pod_ip: str, pod_names: Sequence[str], pod_namespace: str, services: Mapping[tuple[str, str], str]
) -> str:
    """/etc/hosts of a pod: localhost, the pod's own names, and each Service ((namespace, name) -> the address
    that answers for it: with no proxy on the node, a Service name resolves to an endpoint's pod IP)."""
    lines = [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{pod_ip}\t{' '.join(pod_names)}",
    ]
    for (namespace, name), address in sorted(services.items()):
        lines.append(f"{address}\t{' '.join(service_names(name, namespace, pod_namespace))}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PodNetwork:
    netns: str
    veth: str
    ip: str

    @property
    def etc(self) -> Path:
        return NETNS_ETC / self.netns

    def write_hosts(self, text: str) -> None:
        """Rewritten in place: running processes see the file `ip netns exec` mounted when they started."""
        with (self.etc / "hosts").open("r+" if (self.etc / "hosts").exists() else "w") as hosts:
            hosts.seek(0)
            hosts.write(text)
            hosts.truncate()


@dataclass
class NodeNetwork:
    index: int
    network: ipaddress.IPv4Network
    pods: dict[str, PodNetwork] = field(default_factory=dict)
    _free: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"rp{self.index}br"

    @property
    def node_ip(self) -> str:
        return str(self.network.network_address + 1)

    @classmethod
    def claim(cls, indexes: Iterable[int] = range(256)) -> NodeNetwork:
        """Creates the bridge of the first free index, with the node's address on it."""
        OWNERS.mkdir(parents=True, exist_ok=True)
        for index in indexes:
            _reclaim_if_abandoned(index)
            if _ip("link", "add", f"rp{index}br", "type", "bridge", check=False):
                (OWNERS / f"rp{index}").write_text(str(os.getpid()))
                network = list(BASE.subnets(new_prefix=24))[index]
                node = cls(index, network)
                _ip("addr", "add", f"{node.node_ip}/24", "dev", node.bridge)
                _ip("link", "set", node.bridge, "up")
                node._free = [str(host) for host in list(network.hosts())[1:]]
                return node
        raise NetworkError("every node network index is in use (rp*br bridges)")

    def attach(self, key: str) -> PodNetwork:
        """A namespace for the pod `key`: its veth in the bridge, an address, a default route via the node."""
        if not self._free:
            raise NetworkError(f"no pod address left in {self.network}")
        ip = self._free.pop(0)
        slot = int(ipaddress.IPv4Address(ip)) - int(self.network.network_address)
        pod = PodNetwork(netns=f"rp{self.index}p{slot}", veth=f"rp{self.index}v{slot}", ip=ip)
        self._release_leftovers(pod)
        _ip("netns", "add", pod.netns)
        _ip("link", "add", pod.veth, "type", "veth", "peer", "name", "eth0", "netns", pod.netns)
        _ip("link", "set", pod.veth, "master", self.bridge, "up")
        _ip("-n", pod.netns, "addr", "add", f"{ip}/24", "dev", "eth0")
        _ip("-n", pod.netns, "link", "set", "eth0", "up")
        _ip("-n", pod.netns, "link", "set", "lo", "up")
        _ip("-n", pod.netns, "route", "add", "default", "via", self.node_ip)
        pod.etc.mkdir(parents=True, exist_ok=True)
        (pod.etc / "resolv.conf").write_text(RESOLV_CONF)
        self.pods[key] = pod
        return pod

    def detach(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self._release_leftovers(pod)
        self._free.append(pod.ip)

    @staticmethod
    def _release_leftovers(pod: PodNetwork) -> None:
        _ip("link", "del", pod.veth, check=False)
        _ip("netns", "del", pod.netns, check=False)
        shutil.rmtree(pod.etc, ignore_errors=True)

    def close(self) -> None:
        """Removes every pod namespace and the bridge."""
        for key in list(self.pods):
            self.detach(key)
        with contextlib.suppress(NetworkError):
            _ip("link", "del", self.bridge)
        (OWNERS / f"rp{self.index}").unlink(missing_ok=True)


def _owner_alive(index: int) -> bool:
    try:
        pid = int((OWNERS / f"rp{index}").read_text())
    except (OSError, ValueError):
        return False
    return process_alive(pid)


def _reclaim_if_abandoned(index: int) -> None:
    """Removes what an agent that died without cleaning up left under `index`."""
    bridge = f"rp{index}br"
    if not Path(f"/sys/class/net/{bridge}").exists() or _owner_alive(index):
        return
    prefix = f"rp{index}p"
    for netns in Path("/run/netns").glob(f"{prefix}*") if Path("/run/netns").is_dir() else ():
        _ip("netns", "del", netns.name, check=False)
        shutil.rmtree(NETNS_ETC / netns.name, ignore_errors=True)
    for veth in Path("/sys/class/net").glob(f"rp{index}v*"):
        _ip("link", "del", veth.name, check=False)
    _ip("link", "del", bridge, check=False)
