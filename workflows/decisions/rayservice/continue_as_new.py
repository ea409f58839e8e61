"""When the RayService workflow continues as new (its history is kept bounded)."""

from __future__ import annotations


def should_continue_as_new(suggested: bool, history_length: int, history_limit: int | None) -> bool:
    """Continue as new when the server suggests it, or (the test knob) once history reaches
    `history_limit` events."""
    return suggested or (history_limit is not None and history_length >= history_limit)
