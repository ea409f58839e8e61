"""A kubeconfig for the sandbox API server: one cluster, one context, no authentication."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

CONTEXT_NAME = "raypilot-sandbox"


def kubeconfig_document(server_url: str, namespace: str = "default") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": server_url}}],
        "users": [{"name": CONTEXT_NAME, "user": {}}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT_NAME,
        "preferences": {},
    }


def write_kubeconfig(path: str | os.PathLike[str], server_url: str) -> Path:
    """Write the kubeconfig atomically (readers never see half a file); returns its path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".tmp")
    partial.write_text(yaml.safe_dump(kubeconfig_document(server_url), sort_keys=False))
    partial.chmod(0o600)
    partial.replace(target)
    return target
