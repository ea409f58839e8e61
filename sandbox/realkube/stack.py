"""The whole real stack in one block: the control plane (etcd, kube-apiserver, kube-controller-manager,
KubeRay's operator), raypilot's node agent (its pods' Ray real or simulated), the sandbox's Gateway
controller, and raypilot installed as a user installs it. `raypilot sandbox up` serves this until it is told
to stop; leaving the block stops everything in reverse order (the node agent first stops its pods and removes
their network namespaces and interfaces)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox.realkube.controlplane import ControlPlane, control_plane
from sandbox.realkube.gateway import gateway_controller
from sandbox.realkube.install import Installed, install_raypilot
from sandbox.realkube.kuberay import kuberay_operator
from sandbox.realkube.node import NODE_NAME, RayKind, node_agent

__all__ = ["RealStack", "real_cluster", "real_stack", "real_stack_unavailable"]


@dataclass(frozen=True)
class RealStack:
    plane: ControlPlane
    installed: Installed
    ray: RayKind = "real"

    def info(self, pid: int) -> dict[str, object]:
        """What `raypilot sandbox up` records in state.json for this stack (beside the kubeconfigs it copies
        into its DIR)."""
        return {
            "pid": pid,
            "kube": "real",
            "rayMode": self.ray,
            "apiUrl": self.plane.server,
            "node": NODE_NAME,
            "logs": str(self.plane.log_path("kube-apiserver").parent),
        }


def real_stack_unavailable() -> str | None:
    """Why the real stack cannot start on this machine (None when it can): its node agent makes network
    namespaces, which takes root and the `ip` command, and kube-proxy programs nftables through the `nft`
    command. (The binaries `make kube` builds are looked for apart: a cold build takes many minutes.)"""
    if os.geteuid() != 0:
        return "the real stack's node agent makes network namespaces and needs root"
    if shutil.which("ip") is None:
        return "the real stack's node agent needs the `ip` command (Debian's iproute2)"
    if shutil.which("nft") is None:
        return "the real stack's kube-proxy needs the `nft` command (Debian's nftables)"
    return None


@contextlib.contextmanager
def real_cluster(
    plane_directory: Path, node_directory: Path, ray: RayKind = "real", kuberay_feature_gates: str = ""
) -> Iterator[ControlPlane]:
    """The control plane with its node (the node agent, running real or simulated Ray), KubeRay's operator in
    a pod on it, and the Gateway controller, nothing installed."""
    with (
        control_plane(plane_directory, kuberay=False) as plane,
        gateway_controller(plane) as gateway_ready,
        node_agent(plane, node_directory, ray),
        kuberay_operator(plane, kuberay_feature_gates),
    ):
        gateway_ready()
        yield plane


@contextlib.contextmanager
def real_stack(directory: Path, ray: RayKind = "real") -> Iterator[RealStack]:
    """A running real stack with its state under `directory` and pods of `ray` Ray, stopped when the block
    ends."""
    with real_cluster(directory / "kube", directory / "node", ray) as plane:
        yield RealStack(plane, install_raypilot(plane), ray)
