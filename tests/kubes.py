"""The two Kubernetes APIs a `kube_stack` fixture runs a test module on: the sandbox's own, and the real stack
(etcd, kube-apiserver, kube-controller-manager, kube-proxy, KubeRay's operator, the node agent)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.install import Installed

KUBES = ("sandbox", "real")


@dataclass(frozen=True)
class RealKube:
    """A running real stack (tests/conftest.py's `real_kube_of_simulated_ray`): its control plane, the admin's
    kubeconfig, raypilot's accounts, and the API server's audit log."""

    plane: ControlPlane
    installed: Installed

    @property
    def admin(self) -> Path:
        return self.plane.kubeconfig

    @property
    def audit_log(self) -> Path:
        return self.plane.audit_log
