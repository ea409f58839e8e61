"""KubeRay's operator feature gates, as raypilot honours them.

The worker reads the environment variable `RAYPILOT_FEATURE_GATES` (same syntax as KubeRay's
`--feature-gates` flag: `Name=bool,Name=bool`) and passes the string to `parse_feature_gates`;
this module itself never reads the environment, so workflows can carry a `FeatureGates` value
deterministically.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = [
    "FEATURE_GATES_ENV",
    "GATE_NAMES",
    "FeatureGates",
    "parse_feature_gates",
]

FEATURE_GATES_ENV = "RAYPILOT_FEATURE_GATES"


@dataclass(frozen=True)
class FeatureGates:
    """Gate values; defaults are those of KubeRay at the reference commit, except RayCronJob (on)."""

    ray_cluster_status_conditions: bool = True
    ray_job_deletion_policy: bool = True
    ray_multi_host_indexing: bool = True
    ray_service_incremental_upgrade: bool = True
    # On in raypilot (off in KubeRay): RayCronJobs run on Temporal Schedules (README, "Where raypilot
    # differs").
    ray_cron_job: bool = True
    sidecar_submitter_restart: bool = False
    ray_cluster_network_policy: bool = False
    gcs_fault_tolerance_embedded_storage: bool = False
    ray_cluster_mtls: bool = False
    ray_cluster_history_server: bool = False
    kubernetes_was: bool = False

    def enabled(self, gate: str) -> bool:
        """Value of a gate by its KubeRay name (e.g. "RayJobDeletionPolicy")."""
        try:
            attribute = _ATTRIBUTE_BY_GATE[gate]
        except KeyError:
            raise ValueError(_unknown_gate_message(gate)) from None
        value: bool = getattr(self, attribute)
        return value

    def as_dict(self) -> dict[str, bool]:
        """All gates keyed by their KubeRay names, in KubeRay's declaration order."""
        return {gate: getattr(self, attribute) for gate, attribute in _ATTRIBUTE_BY_GATE.items()}

    @classmethod
    def every_gate_on(cls) -> FeatureGates:
        """Every gate enabled: the most a configuration can allow (each gate only lifts a rejection)."""
        return cls(**{field.name: True for field in dataclasses.fields(cls)})


# KubeRay gate name -> FeatureGates attribute.
_ATTRIBUTE_BY_GATE: dict[str, str] = {
    "RayClusterStatusConditions": "ray_cluster_status_conditions",
    "RayJobDeletionPolicy": "ray_job_deletion_policy",
    "RayMultiHostIndexing": "ray_multi_host_indexing",
    "RayServiceIncrementalUpgrade": "ray_service_incremental_upgrade",
    "RayCronJob": "ray_cron_job",
    "SidecarSubmitterRestart": "sidecar_submitter_restart",
    "RayClusterNetworkPolicy": "ray_cluster_network_policy",
    "GCSFaultToleranceEmbeddedStorage": "gcs_fault_tolerance_embedded_storage",
    "RayClusterMTLS": "ray_cluster_mtls",
    "RayClusterHistoryServer": "ray_cluster_history_server",
    "KubernetesWAS": "kubernetes_was",
}

GATE_NAMES: tuple[str, ...] = tuple(_ATTRIBUTE_BY_GATE)

# The spellings Go's strconv.ParseBool accepts, which KubeRay's flag parser relies on.
_BOOL_SPELLINGS: dict[str, bool] = {
    **dict.fromkeys(("1", "t", "T", "true", "TRUE", "True"), True),
    **dict.fromkeys(("0", "f", "F", "false", "FALSE", "False"), False),
}


def _unknown_gate_message(gate: str) -> str:
    return f"unrecognized feature gate: {gate!r} (known gates: {', '.join(GATE_NAMES)})"


def parse_feature_gates(text: str) -> FeatureGates:
    """Parse `Name=bool,Name=bool`; gates not mentioned keep their defaults.

    Empty items are skipped and whitespace around names and values is ignored, as in KubeRay.
    An unknown gate, a missing `=`, or a value that is not a boolean raises ValueError.
    """
    overrides: dict[str, bool] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, separator, raw_value = item.partition("=")
        gate = name.strip()
        if not separator:
            raise ValueError(f"missing bool value for feature gate {gate!r} in {text!r}")
        if gate not in _ATTRIBUTE_BY_GATE:
            raise ValueError(_unknown_gate_message(gate))
        value = raw_value.strip()
        if value not in _BOOL_SPELLINGS:
            raise ValueError(f"invalid value of feature gate {gate}: {value!r} is not a boolean")
        overrides[_ATTRIBUTE_BY_GATE[gate]] = _BOOL_SPELLINGS[value]
    return dataclasses.replace(FeatureGates(), **overrides)
