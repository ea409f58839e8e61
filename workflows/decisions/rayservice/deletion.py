"""What a RayService's `delete` update does with the objects the workflow made.

By default they are deleted, as deleting KubeRay's custom resource deletes them (its garbage collector, the
`Background` propagation of `kubectl delete`). With `{"propagationPolicy": "Orphan"}` (`kubectl delete
--cascade=orphan`, `raypilot delete --cascade=orphan`) the workflow lets go of them instead: it completes and
leaves every RayCluster and Service serving as it was, for another controller to take over (KubeRay's
operator, on the way back to it: docs/gitops.md). Beyond KubeRay, whose RayService keeps no workflow to end.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["PROPAGATION_POLICIES", "deletion_request_error", "lets_go_of_owned_objects", "orphan_request"]

ORPHAN: Final = "Orphan"
# Kubernetes' DeleteOptions.propagationPolicy values; Background and Foreground both delete (the workflow
# always waits for its clusters to be gone before it completes).
PROPAGATION_POLICIES: Final = ("Background", "Foreground", ORPHAN)
_FIELD: Final = "propagationPolicy"


def deletion_request_error(request: Any) -> str | None:
    """Why the `delete` update's argument is refused (None: nothing, or `{"propagationPolicy": P}`)."""
    if request is None:
        return None
    if not isinstance(request, dict):
        return f'the delete update takes nothing or {{"{_FIELD}": ...}}, not {type(request).__name__}'
    unknown = sorted(str(key) for key in request if key != _FIELD)
    if unknown:
        return f"unknown field of the delete request: {', '.join(unknown)} (only {_FIELD} is known)"
    policy = request.get(_FIELD)
    if policy is not None and policy not in PROPAGATION_POLICIES:
        return f"{_FIELD} must be one of {', '.join(PROPAGATION_POLICIES)}, not {policy!r}"
    return None


def lets_go_of_owned_objects(request: Any) -> bool:
    """True when the deletion leaves what the workflow made (the Orphan propagation policy)."""
    return isinstance(request, dict) and request.get(_FIELD) == ORPHAN


def orphan_request() -> dict[str, str]:
    """The `delete` update's argument that lets go of the owned objects."""
    return {_FIELD: ORPHAN}
