"""The Serve config of the active cluster while the desired spec is one that was aborted or rolled back.

After `abort` (or raypilot's own rollback: an unhealthy new cluster, a progress deadline, a failed gate) the
desired manifest is still the aborted one, and its RayCluster hash is suppressed so that no new cluster is
prepared for it (controls.py). Its Serve config must be held back too: submitting it to the active cluster
would apply half of the aborted spec in place, without any of the upgrade's safety (a config whose import
fails takes the serving application down: 404s, seen under load). So the active cluster keeps the config it
was last given (its cache entry) until a different spec is applied, `retry` or `undo` is used.
"""

from __future__ import annotations

from collections.abc import Mapping

from models.rayservice import RayServiceStatuses

__all__ = ["serve_config_while_aborted"]


def serve_config_while_aborted(
    cluster_name: str,
    status: RayServiceStatuses,
    aborted_goal_hash: str | None,
    goal_hash: str,
    cache: Mapping[str, str],
    wanted: str,
) -> str:
    """The config `cluster_name` should run: its cached one when it is the active cluster and the desired spec
    is the aborted one; else `wanted`."""
    is_active = bool(cluster_name) and cluster_name == status.active_service_status.ray_cluster_name
    aborted = aborted_goal_hash is not None and aborted_goal_hash == goal_hash
    if is_active and aborted and cache.get(cluster_name):
        return cache[cluster_name]
    return wanted
