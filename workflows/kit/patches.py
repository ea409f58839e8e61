"""Patches folded into one baseline per workflow type.

Each `workflow.patched(id)` a new run asks writes two history events (its marker and the TemporalChangeVersion
search attribute upsert the SDK adds), so a workflow that asked every patch it ever had at run start paid ~2
events per change it ever shipped, in every run. A baseline patch stands for all the patches released
before it: a new run asks only the baseline (2 events); a run recorded before the baseline has no baseline
marker and replays through the individual patches, exactly as it was recorded. A change made after a baseline
gets its own patch again until the next baseline folds it in (add its id to the next baseline's list, never
remove one).
"""

from __future__ import annotations

from temporalio import workflow

__all__ = ["PatchSet"]


class PatchSet:
    """The patches of one run: asks the baseline first (at run start, before any command), then answers
    `has(id)` for the patches it stands for without asking them again."""

    def __init__(self, baseline: str, folded: frozenset[str]) -> None:
        self._folded = folded
        self.baseline = workflow.patched(baseline)

    def has(self, patch_id: str) -> bool:
        """Whether this run takes the patched path of `patch_id`: always under the baseline (for a folded id),
        otherwise as `workflow.patched` answers (a marker in the history on replay, True for a new run)."""
        if self.baseline and patch_id in self._folded:
            return True
        return workflow.patched(patch_id)
