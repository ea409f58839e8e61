"""Submitting the Serve config: when to PUT it, to which cluster, with which target_capacity, and the cache.

KubeRay counterparts (rayservice_controller.go):
- `should_submit_serve_config`: checkIfNeedSubmitServeApplications (exact reasons)
- `should_skip_serve_config_submission`: reconcileServe's skipConfigUpdate (the active cluster during an
  incremental upgrade; the pending cluster during a rollback)
- `serve_config_json`: updateServeDeployment (YAML -> JSON, target_capacity from the status)
- `target_capacity_config`: applyServeTargetCapacity (None when the config already has the goal)
- `prune_serve_config_cache`, `cache_submitted_serve_config`: cleanUpServeConfigCache, cacheServeConfig
The cache maps a RayCluster name to the serveConfigV2 text last PUT to it; an empty config is never cached.

Where raypilot differs: `serve_config_for_cluster`: during an incremental rollback the active cluster keeps
the Serve config it was last given, so a third spec applied mid-upgrade (A -> B -> C) reaches only the new
cluster prepared after the rollback (KubeRay PUTs C's config to the active cluster whenever it differs from
its cache, and after an operator restart on any cache miss: kuberay#4717). The cache lives in the workflow
state (carried through continue-as-new) instead of an in-process LRU, so a worker restart does not
resubmit; the "no apps found -> resubmit" rule still covers a head restart that lost the applications.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from models.meta import is_condition_true
from models.rayservice import RayServiceConditionType, RayServiceStatuses
from models.yaml_loader import StringTimestampLoader
from workflows.decisions.rayservice.conditions import RayServiceEvent

__all__ = [
    "REASON_CONFIG_CHANGED",
    "REASON_CONFIG_MATCHES",
    "REASON_NOTHING_CACHED",
    "REASON_NO_APPLICATIONS",
    "ServeConfigError",
    "cache_submitted_serve_config",
    "expected_target_capacity",
    "parse_serve_config",
    "prune_serve_config_cache",
    "serve_config_for_cluster",
    "serve_config_json",
    "serve_config_target_capacity",
    "serve_update_event",
    "should_skip_serve_config_submission",
    "should_submit_serve_config",
    "target_capacity_config",
]

REASON_NOTHING_CACHED: Final = "Nothing has been cached for the cluster."
REASON_NO_APPLICATIONS: Final = (
    "No Serve application found in the RayCluster. "
    "A possible reason is that the head Pod crashed and GCS FT was not enabled."
)
REASON_CONFIG_CHANGED: Final = "Current V2 Serve config doesn't match cached Serve config."
REASON_CONFIG_MATCHES: Final = "Current V2 Serve config matches cached Serve config."


class ServeConfigError(ValueError):
    """serveConfigV2 is not a YAML mapping."""


def parse_serve_config(serve_config_v2: str) -> dict[str, Any]:
    """serveConfigV2 (YAML or JSON text) as a JSON object; empty text is an empty object."""
    try:
        loaded = yaml.load(serve_config_v2, Loader=StringTimestampLoader)  # SafeLoader subclass
    except yaml.YAMLError as error:
        raise ServeConfigError(f"serveConfigV2 is not valid YAML: {error}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ServeConfigError(f"serveConfigV2 must be a YAML mapping, got {type(loaded).__name__}")
    return loaded


def should_submit_serve_config(
    cached_config: str, spec_config: str, applications: Mapping[str, object]
) -> tuple[bool, str]:
    """checkIfNeedSubmitServeApplications: (PUT the config?, why). `applications` are those the cluster
    runs."""
    if cached_config == "":
        return True, REASON_NOTHING_CACHED
    if not applications:
        return True, REASON_NO_APPLICATIONS
    if cached_config != spec_config:
        return True, REASON_CONFIG_CHANGED
    return False, REASON_CONFIG_MATCHES


def should_skip_serve_config_submission(
    cluster_name: str, status: RayServiceStatuses, incremental_enabled: bool
) -> bool:
    """Never PUT a new config to the active cluster during an incremental upgrade (it keeps serving the old
    one), nor to the pending cluster during a rollback (it is only drained)."""
    if not incremental_enabled:
        return False
    is_active = cluster_name == status.active_service_status.ray_cluster_name
    upgrading = is_condition_true(status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS)
    rolling_back = is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
    if is_active and upgrading and not rolling_back:
        return True
    return not is_active and rolling_back


def serve_config_for_cluster(
    cluster_name: str,
    status: RayServiceStatuses,
    incremental_enabled: bool,
    cache: Mapping[str, str],
    spec: str,
) -> str:
    """The serveConfigV2 text `cluster_name` should run: the spec's, except for the active cluster during an
    incremental rollback, which stays on the config it was last given (its cache entry) while traffic comes
    back to it; the spec's config (a third spec's) goes to the cluster prepared after the rollback."""
    rolling_back = is_condition_true(status.conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
    is_active = cluster_name == status.active_service_status.ray_cluster_name
    if incremental_enabled and rolling_back and is_active and cache.get(cluster_name):
        return cache[cluster_name]
    return spec


def serve_config_target_capacity(
    cluster_name: str, status: RayServiceStatuses, incremental_enabled: bool
) -> int | None:
    """The target_capacity updateServeDeployment injects: that cluster's status targetCapacity (incremental
    only)."""
    if not incremental_enabled:
        return None
    active, pending = status.active_service_status, status.pending_service_status
    if cluster_name == active.ray_cluster_name and active.target_capacity is not None:
        return active.target_capacity
    if cluster_name == pending.ray_cluster_name and pending.target_capacity is not None:
        return pending.target_capacity
    return None


def expected_target_capacity(serve_config_v2: str, injected: int | None) -> int | float | None:
    """The target_capacity Serve should report once the config is applied: the one raypilot injects
    (incremental upgrades), else the user's own `target_capacity` in serveConfigV2 (passed through as KubeRay
    does), else None (Serve's 100). An unreadable config counts as naming none."""
    if injected is not None:
        return injected
    try:
        configured = parse_serve_config(serve_config_v2).get("target_capacity")
    except ServeConfigError:
        return None
    return configured if isinstance(configured, int | float) and not isinstance(configured, bool) else None


def serve_config_json(serve_config_v2: str, target_capacity: int | None) -> dict[str, Any]:
    """The body of PUT /api/serve/applications/: the YAML config as JSON, with target_capacity when given."""
    config = parse_serve_config(serve_config_v2)
    if target_capacity is not None:
        config["target_capacity"] = target_capacity
    return config


def target_capacity_config(cached_config: str, spec_config: str, goal: int) -> dict[str, Any] | None:
    """applyServeTargetCapacity: the config to PUT to move a cluster to `goal`, or None when the config
    (the cached one, else the spec's) already names that target_capacity."""
    config = parse_serve_config(cached_config or spec_config)
    current = config.get("target_capacity")
    if isinstance(current, int | float) and not isinstance(current, bool) and int(current) == goal:
        return None
    config["target_capacity"] = goal
    return config


def prune_serve_config_cache(
    cache: Mapping[str, str], active_cluster: str, pending_cluster: str
) -> dict[str, str]:
    """cleanUpServeConfigCache: keep only the entries of the active and pending clusters."""
    return {name: config for name, config in cache.items() if name in (active_cluster, pending_cluster)}


def cache_submitted_serve_config(
    cache: Mapping[str, str], cluster_name: str, spec_config: str
) -> dict[str, str]:
    """cacheServeConfig after a successful PUT of the spec's config (an empty config is not cached)."""
    updated = dict(cache)
    if spec_config:
        updated[cluster_name] = spec_config
    return updated


def serve_update_event(namespace: str, cluster: str, error: str | None) -> RayServiceEvent:
    """The event after a Serve config PUT: UpdatedServeApplications, or FailedToUpdateServeApplications with
    the dashboard's error."""
    if error is None:
        return RayServiceEvent(
            "Normal",
            "UpdatedServeApplications",
            f"Updated serve applications to the RayCluster {namespace}/{cluster}",
        )
    return RayServiceEvent(
        "Warning",
        "FailedToUpdateServeApplications",
        f"Failed to update serve applications to the RayCluster {namespace}/{cluster}: {error}",
    )
