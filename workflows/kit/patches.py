"""Patches folded into baselines per workflow type.

Each `workflow.patched(id)` a new run asks writes two history events (its marker and the TemporalChangeVersion
search attribute upsert the SDK adds), so a workflow that asked every patch it ever had at run start paid ~2
events per change it ever shipped, in every run. A baseline patch stands for all the patches released
before it: a new run asks only the newest baseline (2 events); a run recorded before the baseline has no
baseline marker and replays through the individual patches, exactly as it was recorded. A change made after a
baseline gets its own patch again until the next baseline folds it in (add its id to the next baseline's
list, never remove one).

Baselines form a chain, newest first: a new baseline folds everything the previous one stood for plus the
patches released since. A run asks the newest; if its history was recorded without it, it asks the previous
one, and so on, so a run recorded under any baseline replays through the baseline it asked, and one recorded
before the first through its individual patches. A new run still asks only one baseline: 2 events.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from temporalio import workflow

__all__ = ["Baseline", "PatchSet"]


@dataclass(frozen=True)
class Baseline:
    """A baseline patch and every patch id it stands for."""

    patch_id: str
    folded: frozenset[str]


class PatchSet:
    """The patches of one run: asks the baselines first (at run start, before any command), newest first,
    until one is in the run (always the newest for a new run); then answers `has(id)` for the patches that
    baseline stands for without asking them again."""

    def __init__(self, *baselines: Baseline) -> None:
        check_chain(baselines)
        self.baseline: Baseline | None = None
        for baseline in baselines:
            # An older baseline is asked only when the newer one is absent: on replay of a run recorded before
            # it. Asking an absent patch on replay writes nothing, so the replayed commands stay the recorded.
            if workflow.patched(baseline.patch_id):
                self.baseline = baseline
                break

    def has(self, patch_id: str) -> bool:
        """Whether this run takes the patched path of `patch_id`: always under a baseline that folds it,
        otherwise as `workflow.patched` answers (a marker in the history on replay, True for a new run)."""
        if self.baseline is not None and patch_id in self.baseline.folded:
            return True
        return workflow.patched(patch_id)


def check_chain(baselines: tuple[Baseline, ...]) -> None:
    """Raises ValueError unless `baselines` is a chain, newest first: each folds every patch the one after it
    does (a run recorded under the older baseline took all of those paths; the newer one must too)."""
    if not baselines:
        raise ValueError("a patch set needs at least one baseline")
    for newer, older in itertools.pairwise(baselines):
        missing = older.folded - newer.folded
        if missing:
            raise ValueError(f"baseline {newer.patch_id} drops {sorted(missing)} of {older.patch_id}")
