"""raypilot installed on a control plane as a user installs it: deploy/'s CRDs by server-side apply, the
worker's ServiceAccount with deploy/'s ClusterRole (plus the dashboard-proxy ClusterRole a worker outside the
cluster needs), and a kubeconfig that authenticates as that ServiceAccount, so the API server enforces
exactly the RBAC that deploy/ ships."""

from __future__ import annotations

from pathlib import Path

import yaml

from sandbox.realkube.controlplane import ControlPlane, token_kubeconfig

__all__ = ["WORKER_ACCOUNT", "install_raypilot"]

DEPLOY = Path(__file__).parents[2] / "deploy"
WORKER_ACCOUNT = "raypilot-worker"
NAMESPACE = "default"
TOKEN_DURATION = "24h"


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


def install_raypilot(plane: ControlPlane) -> Path:
    """Installs the CRDs and the worker's RBAC; returns the worker's kubeconfig (a ServiceAccount token)."""
    plane.kubectl("apply", "--server-side", "-k", str(DEPLOY / "crds"))
    plane.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/rayjobs.raypilot.io",
        "crd/rayservices.raypilot.io",
    )
    for name in ("serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml"):
        plane.kubectl("apply", "--server-side", "-n", NAMESPACE, "-f", str(DEPLOY / "base" / name))
    plane.kubectl("apply", "--server-side", "-f", str(DEPLOY / "clusterrole-dashboard-proxy.yaml"))
    plane.kubectl("apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(_proxy_binding()))
    token = plane.kubectl("create", "token", WORKER_ACCOUNT, "-n", NAMESPACE, f"--duration={TOKEN_DURATION}")
    kubeconfig = plane.directory / "worker.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(token_kubeconfig(plane.server, plane.certs, WORKER_ACCOUNT, token.strip()))
    )
    kubeconfig.chmod(0o600)
    return kubeconfig
