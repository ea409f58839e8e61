"""`raypilot.io/gateway` and `raypilot.io/httproute`: a RayService's incremental upgrade through a shared,
centrally managed Gateway and through an HTTPRoute its users own (issue #34; KubeRay's open PR #5018
`gatewayRef`). Both name an object as `<namespace>/<name>`.

- `raypilot.io/gateway`: raypilot creates no `<rs>-gateway`; its `<rs>-httproute` attaches to this Gateway.
- `raypilot.io/httproute`: raypilot creates no HTTPRoute; it edits only the backendRefs it owns in this one
  (workflows/decisions/rayservice/upgrade/user_route.py) and labels it `raypilot.io/traffic-split:
  in-progress` while traffic is split between two clusters.

Both need `spec.upgradeStrategy.type: NewClusterWithIncrementalUpgrade` (they steer that upgrade's traffic);
a bad value is refused with a message naming the annotation before anything is created. Whether the objects
exist, and whether the Gateway admits the route, is known only at run time (a status condition says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from models.formats import dns1123_label_errors, dns1123_subdomain_errors

__all__ = [
    "ANNOTATION_GATEWAY",
    "ANNOTATION_HTTPROUTE",
    "LABEL_TRAFFIC_SPLIT",
    "TRAFFIC_SPLIT_IN_PROGRESS",
    "NamespacedName",
    "parse_namespaced_name",
    "shared_gateway_of",
    "traffic_refs_problem",
    "user_route_of",
]

ANNOTATION_GATEWAY: Final = "raypilot.io/gateway"
ANNOTATION_HTTPROUTE: Final = "raypilot.io/httproute"
# On a user-owned HTTPRoute while its traffic is split between two clusters (a GitOps tool can ignore the
# route's weights then); removed when one cluster takes all traffic again.
LABEL_TRAFFIC_SPLIT: Final = "raypilot.io/traffic-split"
TRAFFIC_SPLIT_IN_PROGRESS: Final = "in-progress"


@dataclass(frozen=True)
class NamespacedName:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_namespaced_name(raw: str) -> NamespacedName | None:
    """`<namespace>/<name>` (a DNS-1123 label and a DNS-1123 subdomain, blanks around them allowed); None for
    anything else."""
    parts = raw.strip().split("/")
    if len(parts) != 2:
        return None
    namespace, name = (part.strip() for part in parts)
    if not namespace or not name or dns1123_label_errors(namespace) or dns1123_subdomain_errors(name):
        return None
    return NamespacedName(namespace, name)


def shared_gateway_of(annotations: Mapping[str, str] | None) -> NamespacedName | None:
    raw = (annotations or {}).get(ANNOTATION_GATEWAY)
    return parse_namespaced_name(raw) if raw is not None else None


def user_route_of(annotations: Mapping[str, str] | None) -> NamespacedName | None:
    raw = (annotations or {}).get(ANNOTATION_HTTPROUTE)
    return parse_namespaced_name(raw) if raw is not None else None


def traffic_refs_problem(annotations: Mapping[str, str] | None, incremental: bool) -> str | None:
    """Why `raypilot.io/gateway` or `raypilot.io/httproute` is unusable; None when both are absent or
    valid. `incremental`: the RayService upgrades with NewClusterWithIncrementalUpgrade (its feature gate
    on)."""
    found = annotations or {}
    for key, example in ((ANNOTATION_GATEWAY, "infra/shared-gateway"), (ANNOTATION_HTTPROUTE, "team-a/api")):
        raw = found.get(key)
        if raw is None:
            continue
        if parse_namespaced_name(raw) is None:
            return f'metadata.annotations[{key}]: must be "<namespace>/<name>", e.g. "{example}", got {raw!r}'
        if not incremental:
            return (
                f"metadata.annotations[{key}]: needs spec.upgradeStrategy.type "
                "NewClusterWithIncrementalUpgrade (the annotation steers that upgrade's traffic)"
            )
    return None
