"""Objects the RayCluster controller keeps next to the pods: head Service, auth token Secret, status."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from sandbox.controllers.raycluster_pods import (
    AUTH_TOKEN_SECRET_KEY,
    auth_secret_name,
    head_service,
    owner_reference,
)
from sandbox.controllers.raycluster_podstatus import now_rfc3339
from sandbox.controllers.raycluster_status import cluster_status
from sandbox.store import Store


def ensure_head_service(store: Store, cluster: Mapping[str, Any]) -> dict[str, Any]:
    """Create `<cluster>-head-svc` when missing (also after a user deleted it); an existing one is kept."""
    wanted = head_service(cluster)
    namespace = cluster["metadata"].get("namespace", "default")
    existing = store.try_get("v1", "Service", namespace, wanted["metadata"]["name"])
    return existing if existing is not None else store.create("v1", "Service", wanted)


def ensure_auth_secret(store: Store, cluster: Mapping[str, Any]) -> None:
    """With `authOptions.mode: token` and no `secretName`, KubeRay generates the token Secret `<cluster>`."""
    name = auth_secret_name(cluster)
    options = (cluster.get("spec") or {}).get("authOptions") or {}
    namespace = cluster["metadata"].get("namespace", "default")
    if name is None or options.get("secretName") or store.try_get("v1", "Secret", namespace, name):
        return
    token = base64.b64encode(secrets.token_urlsafe(32).encode()).decode()
    secret = {
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner_reference(cluster)]},
        "type": "Opaque",
        "data": {AUTH_TOKEN_SECRET_KEY: token},
    }
    store.create("v1", "Secret", secret)


def write_cluster_status(
    store: Store,
    cluster: Mapping[str, Any],
    pods_of: Callable[[Mapping[str, Any]], list[dict[str, Any]]],
    service: Mapping[str, Any] | None,
) -> None:
    """Write the computed status when it differs (lastUpdateTime aside): an idle cluster causes no events."""
    meta = cluster["metadata"]
    fresh = store.try_get("ray.io/v1", "RayCluster", meta.get("namespace"), meta["name"])
    if fresh is None or fresh["metadata"]["uid"] != meta["uid"]:
        return
    status = cluster_status(fresh, pods_of(fresh), service)
    previous = dict(fresh.get("status") or {})
    if _without_update_time(status) == _without_update_time(previous):
        return
    status["lastUpdateTime"] = now_rfc3339()
    fresh["status"] = status
    store.update("ray.io/v1", "RayCluster", fresh, status=True)


def _without_update_time(status: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in status.items() if key != "lastUpdateTime"}
