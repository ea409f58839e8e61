"""A pod's way to the API server, as a kubelet gives it: the ServiceAccount token, the cluster's CA and the
namespace at /var/run/secrets/kubernetes.io/serviceaccount (where the API server's ServiceAccount admission
mounts its projected volume), and KUBERNETES_SERVICE_HOST/PORT naming the `kubernetes` Service, which the
node agent answers on the node's address (its pods' /etc/hosts resolve the name there, and the API server's
serving certificate carries the name). KubeRay's autoscaler sidecar and any in-cluster client rely on both.

The token is a bound one (TokenRequest for the pod's ServiceAccount, bound to the pod), written under the
pod's directory and replaced before it expires; a container that mounts the path gets that directory bound
there, read-only, in the mount namespace `ip netns exec` makes for it alone (so the host never sees the
mount; the empty mount point is the only thing the agent makes on the host).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "API_ENV",
    "SERVICE_ACCOUNT_PATH",
    "TOKEN_SECONDS",
    "TokenIssuer",
    "bind_service_account",
    "mounts_service_account",
    "write_credentials",
]

SERVICE_ACCOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_SECONDS = 3600  # a kubelet asks for an hour and renews at 80 %
API_HOST = "kubernetes.default.svc"
API_PORT = 443
API_ENV = {
    "KUBERNETES_SERVICE_HOST": API_HOST,
    "KUBERNETES_SERVICE_PORT": str(API_PORT),
    "KUBERNETES_SERVICE_PORT_HTTPS": str(API_PORT),
}


@dataclass(frozen=True)
class TokenIssuer:
    """`issue(pod)` asks the API server for a token of the pod's ServiceAccount bound to the pod; `ca_pem`
    is the cluster's CA certificate."""

    issue: Callable[[Mapping[str, Any]], Awaitable[str]]
    ca_pem: bytes


def mounts_service_account(container: Mapping[str, Any]) -> bool:
    return any(
        mount.get("mountPath") == SERVICE_ACCOUNT_PATH for mount in container.get("volumeMounts") or []
    )


def write_credentials(directory: Path, token: str, ca_pem: bytes, namespace: str) -> None:
    """Each file replaced whole (a rename): a container reading during a renewal never sees half a token."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in (("token", token.encode()), ("ca.crt", ca_pem), ("namespace", namespace.encode())):
        partial = directory / f".{name}.new"
        partial.write_bytes(content)
        partial.chmod(0o644)
        os.replace(partial, directory / name)


def bind_service_account(source: Path, argv: list[str]) -> list[str]:
    """The container's command, run once `source` is bound read-only at SERVICE_ACCOUNT_PATH."""
    Path(SERVICE_ACCOUNT_PATH).mkdir(parents=True, exist_ok=True)
    script = 'mount --bind "$0" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return ["sh", "-c", script, str(source), SERVICE_ACCOUNT_PATH, *argv]
