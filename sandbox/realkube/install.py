"""raypilot installed on a control plane as a user installs it: deploy/'s CRDs by server-side apply, the
worker's ServiceAccount with deploy/'s ClusterRole (plus the dashboard-proxy ClusterRole a worker outside the
cluster needs), `raypilot controller`'s ServiceAccount with deploy/controller's ClusterRole and Lease Role,
and a kubeconfig per account that authenticates as it, so the API server enforces exactly the RBAC that
deploy/ ships."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from sandbox.realkube.controlplane import ControlPlane, token_kubeconfig, wait_established

__all__ = ["CONTROLLER_ACCOUNT", "WORKER_ACCOUNT", "Installed", "install_raypilot"]

DEPLOY = Path(__file__).parents[2] / "deploy"
WORKER_ACCOUNT = "raypilot-worker"
CONTROLLER_ACCOUNT = "raypilot-controller"
NAMESPACE = "default"
TOKEN_DURATION = "24h"
# The worker's and the controller's ServiceAccounts, roles and bindings, as deploy/ ships them.
_ACCOUNT_FILES = (
    *(
        DEPLOY / part / name
        for part in ("base", "controller")
        for name in ("serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml")
    ),
    DEPLOY / "controller" / "role-leader-election.yaml",
    DEPLOY / "clusterrole-dashboard-proxy.yaml",
)


def _proxy_binding() -> dict[str, object]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "raypilot-worker-dashboard-proxy"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "raypilot-dashboard-proxy",
        },
        "subjects": [{"kind": "ServiceAccount", "name": WORKER_ACCOUNT, "namespace": NAMESPACE}],
    }


@dataclass(frozen=True)
class Installed:
    """The kubeconfigs of raypilot's two accounts (ServiceAccount tokens)."""

    worker: Path
    controller: Path


def install_raypilot(plane: ControlPlane) -> Installed:
    """Installs the CRDs, the worker's and the controller's RBAC; returns their kubeconfigs."""
    plane.kubectl("apply", "--server-side", "-k", str(DEPLOY / "crds"))
    # The accounts and their roles in one apply: each kubectl run costs seconds on a loaded machine.
    documents = [path.read_text() for path in _ACCOUNT_FILES] + [yaml.safe_dump(_proxy_binding())]
    plane.kubectl("apply", "--server-side", "-n", NAMESPACE, "-f", "-", input_text="\n---\n".join(documents))
    wait_established(plane, ("rayjobs.raypilot.io", "rayservices.raypilot.io"))
    return Installed(
        _account_kubeconfig(plane, WORKER_ACCOUNT, plane.directory / "worker.kubeconfig"),
        _account_kubeconfig(plane, CONTROLLER_ACCOUNT, plane.directory / "controller.kubeconfig"),
    )


def _account_kubeconfig(plane: ControlPlane, account: str, path: Path) -> Path:
    token = plane.kubectl("create", "token", account, "-n", NAMESPACE, f"--duration={TOKEN_DURATION}")
    path.write_text(yaml.safe_dump(token_kubeconfig(plane.server, plane.certs, account, token.strip())))
    path.chmod(0o600)
    return path
