"""When the RayService workflow continues as new: to keep its history bounded, and to move to a new build of
raypilot (Worker Versioning: a run is pinned to its build until it continues as new)."""

from __future__ import annotations


def should_continue_as_new(
    suggested: bool, history_length: int, history_limit: int | None, target_build_changed: bool = False
) -> bool:
    """Continue as new when the server suggests it, when the deployment's target build is no longer this
    run's, or (the test knob) once history reaches `history_limit` events."""
    return (
        suggested or target_build_changed or (history_limit is not None and history_length >= history_limit)
    )
