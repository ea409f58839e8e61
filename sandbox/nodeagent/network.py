"""The node's network: a network namespace for the node, with a bridge for its pods and kube-proxy's rules, a
veth from the host into it, and a network namespace per pod with a veth into the bridge and an address of the
node's /24.

The node's own namespace is what makes the Service data plane real: kube-proxy programs its nftables rules
there (their table names are fixed, so two nodes on one machine need a namespace each), and every packet to a
pod or a Service's clusterIP passes through it. The host routes the node's pod range and the control plane's
Service range to it; pods route everything through the bridge's address. The node's address (the host end of
the veth) is where the node agent listens (the kubelet API, the `kubernetes` Service) and what the API server
proxies to (it refuses loopback addresses); pods reach it through the node's namespace.

Names resolve through per-namespace files that `ip netns exec` mounts over /etc: `hosts` (the pod itself and
every Service, see `hosts_file`) and a `resolv.conf` with no reachable server, so any other name fails at once
instead of waiting on a resolver the pod cannot reach.

Every interface and namespace name starts with `rp<index>`: the node's namespace `rp<index>n` with the bridge
`rp<index>br`, the host's veth `rp<index>h` (its peer in the node is `rp<index>u`), pod namespaces
`rp<index>p<n>` and their veths `rp<index>v<n>` (in the node's namespace). The index is claimed by creating
the host's veth (the kernel refuses a second interface of the same name), so several agents on one machine
never share a range. The claiming process writes its PID to `OWNERS/rp<index>`; an index whose owner is gone
(an agent killed with SIGKILL) is cleaned up (its namespaces and veths removed) and claimed again.
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

from sandbox.ray.processes import process_alive

__all__ = ["NetworkError", "NodeNetwork", "PodNetwork", "hosts_file", "service_names"]

# One /24 per node agent for its pods, and one for the veth between the host and the node; the control plane's
# Service range (sandbox/realkube/controlplane.py) stays apart.
BASE = ipaddress.IPv4Network("10.200.0.0/16")
UPLINK_BASE = ipaddress.IPv4Network("10.201.0.0/16")
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
    def netns(self) -> str:
        """The node's own network namespace (the bridge, kube-proxy's rules)."""
        return f"rp{self.index}n"

    @property
    def bridge(self) -> str:
        return f"rp{self.index}br"

    @property
    def host_veth(self) -> str:
        return f"rp{self.index}h"

    @property
    def node_ip(self) -> str:
        """The node's address: the host's end of the veth into the node's namespace."""
        return str(list(UPLINK_BASE.subnets(new_prefix=24))[self.index].network_address + 1)

    @property
    def uplink_ip(self) -> str:
        """The node namespace's end of that veth, the host's way to pods and Services."""
        return str(list(UPLINK_BASE.subnets(new_prefix=24))[self.index].network_address + 2)

    @property
    def gateway_ip(self) -> str:
        """The bridge's address: every pod's default route."""
        return str(self.network.network_address + 1)

    @classmethod
    def claim(cls, indexes: Iterable[int] = range(256)) -> NodeNetwork:
        """Makes the node's namespace of the first free index, its bridge and its veth to the host."""
        OWNERS.mkdir(parents=True, exist_ok=True)
        for index in indexes:
            _reclaim_if_abandoned(index)
            if _ip("link", "add", f"rp{index}h", "type", "veth", "peer", "name", f"rp{index}u", check=False):
                (OWNERS / f"rp{index}").write_text(str(os.getpid()))
                node = cls(index, list(BASE.subnets(new_prefix=24))[index])
                node._build()
                node._free = [str(host) for host in list(node.network.hosts())[1:]]
                return node
        raise NetworkError("every node network index is in use (rp*h veths)")

    def _build(self) -> None:
        uplink = f"rp{self.index}u"
        _ip("netns", "del", self.netns, check=False)
        _ip("netns", "add", self.netns)
        _ip("link", "set", uplink, "netns", self.netns)
        _ip("addr", "add", f"{self.node_ip}/24", "dev", self.host_veth)
        _ip("link", "set", self.host_veth, "up")
        inside = ("-n", self.netns)
        _ip(*inside, "link", "set", "lo", "up")
        _ip(*inside, "addr", "add", f"{self.uplink_ip}/24", "dev", uplink)
        _ip(*inside, "link", "set", uplink, "up")
        _ip(*inside, "link", "add", self.bridge, "type", "bridge")
        _ip(*inside, "addr", "add", f"{self.gateway_ip}/24", "dev", self.bridge)
        _ip(*inside, "link", "set", self.bridge, "up")
        _ip(*inside, "route", "add", "default", "via", self.node_ip)
        self.exec_in_node("sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
        _ip("route", "add", str(self.network), "via", self.uplink_ip)

    def exec_in_node(self, *argv: str) -> None:
        done = subprocess.run(["ip", "netns", "exec", self.netns, *argv], capture_output=True, text=True)
        if done.returncode != 0:
            raise NetworkError(f"in {self.netns}: {' '.join(argv)}: {done.stderr.strip()}")

    def route_services(self, cidr: str) -> None:
        """The control plane's Service range through the node, where kube-proxy's rules answer for it."""
        _ip("route", "replace", cidr, "via", self.uplink_ip)

    def attach(self, key: str) -> PodNetwork:
        """A namespace for the pod `key`: a veth into the bridge, an address, the bridge as default route."""
        if not self._free:
            raise NetworkError(f"no pod address left in {self.network}")
        ip = self._free.pop(0)
        slot = int(ipaddress.IPv4Address(ip)) - int(self.network.network_address)
        pod = PodNetwork(netns=f"rp{self.index}p{slot}", veth=f"rp{self.index}v{slot}", ip=ip)
        self._release_leftovers(pod)
        _ip("netns", "add", pod.netns)
        node = ("-n", self.netns)
        _ip(*node, "link", "add", pod.veth, "type", "veth", "peer", "name", "eth0", "netns", pod.netns)
        _ip(*node, "link", "set", pod.veth, "master", self.bridge, "up")
        _ip("-n", pod.netns, "addr", "add", f"{ip}/24", "dev", "eth0")
        _ip("-n", pod.netns, "link", "set", "eth0", "up")
        _ip("-n", pod.netns, "link", "set", "lo", "up")
        _ip("-n", pod.netns, "route", "add", "default", "via", self.gateway_ip)
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

    def _release_leftovers(self, pod: PodNetwork) -> None:
        _ip("-n", self.netns, "link", "del", pod.veth, check=False)
        _ip("netns", "del", pod.netns, check=False)
        shutil.rmtree(pod.etc, ignore_errors=True)

    def close(self) -> None:
        """Removes every pod namespace, the node's namespace and the veth to it (its routes go with it)."""
        for key in list(self.pods):
            self.detach(key)
        _ip("netns", "del", self.netns, check=False)
        shutil.rmtree(NETNS_ETC / self.netns, ignore_errors=True)
        with contextlib.suppress(NetworkError):
            _ip("link", "del", self.host_veth)
        (OWNERS / f"rp{self.index}").unlink(missing_ok=True)


def _owner_alive(index: int) -> bool:
    try:
        pid = int((OWNERS / f"rp{index}").read_text())
    except (OSError, ValueError):
        return False
    return process_alive(pid)


def _reclaim_if_abandoned(index: int) -> None:
    """Removes what an agent that died without cleaning up left under `index`."""
    host_veth = f"rp{index}h"
    if not Path(f"/sys/class/net/{host_veth}").exists() or _owner_alive(index):
        return
    prefix = f"rp{index}p"
    for netns in Path("/run/netns").glob(f"{prefix}*") if Path("/run/netns").is_dir() else ():
        _ip("netns", "del", netns.name, check=False)
        shutil.rmtree(NETNS_ETC / netns.name, ignore_errors=True)
    _ip("netns", "del", f"rp{index}n", check=False)
    shutil.rmtree(NETNS_ETC / f"rp{index}n", ignore_errors=True)
    _ip("link", "del", host_veth, check=False)
